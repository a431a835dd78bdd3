// The pages of one project, in navigation order. A new area adds its entry here and nothing else: the
// sidebar lists it and /projects/:slug/<path> renders it inside the project's layout.
import type { FunctionComponent } from 'preact';
import type { Project, Role } from '../../api/types.ts';
import { ProjectMembers } from './members.tsx';
import { ProjectOverview } from './overview.tsx';

export interface ProjectPageProps {
  project: Project;
  /** Parameters of the section's own path (e.g. `:id` in `tasks/:id`). */
  params: Record<string, string>;
  reloadProject: () => Promise<void>;
}

export interface ProjectSection {
  /** Below /projects/:slug/; '' is the overview; may hold parameters (`tasks/:id`). */
  path: string;
  /** Shown in the navigation when set (detail pages leave it out). */
  label?: string;
  /** The lowest project role that sees the link; the server still decides what it answers. */
  minRole?: Role;
  component: FunctionComponent<ProjectPageProps>;
}

export const PROJECT_SECTIONS: ProjectSection[] = [
  { path: '', label: 'Overview', component: ProjectOverview },
  // Agents, tasks, workers, queues and commands take their places here as those areas land.
  { path: 'members', label: 'Members', minRole: 'admin', component: ProjectMembers },
];

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
export const roleAtLeast = (have: Role, need: Role): boolean => RANK[have] >= RANK[need];
