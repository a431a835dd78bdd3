// Every engine of the matrix, in the order the suite runs them.
import { arq } from './arq.ts';
import { celery } from './celery.ts';
import { dramatiq } from './dramatiq.ts';
import type { Engine } from './engine.ts';
import { huey } from './huey.ts';
import { rq } from './rq.ts';
import { taskiq } from './taskiq.ts';

export const ENGINES: Engine[] = [celery, rq, dramatiq, huey, arq, taskiq];
