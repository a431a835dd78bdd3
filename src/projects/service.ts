// Projects: the rules. Other areas reach projects through here.
import type { Executor } from '../db/connect.ts';
import { projectById, projectBySlug, type ProjectRow } from './store.ts';

export type { ProjectRow };

export const findProjectById = (ex: Executor, id: string): Promise<ProjectRow | null> => projectById(ex, id);
export const findProjectBySlug = (ex: Executor, slug: string): Promise<ProjectRow | null> => projectBySlug(ex, slug);
