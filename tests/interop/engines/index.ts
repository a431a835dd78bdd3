// Every engine of the matrix, in the order the suite runs them.
import { celery } from './celery.ts';
import type { Engine } from './engine.ts';

export const ENGINES: Engine[] = [celery];
