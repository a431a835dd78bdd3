// The pages of one project, in navigation order. A new area adds its entry here and nothing else: the
// sidebar lists it and /projects/:slug/<path> renders it inside the project's layout.
import type { FunctionComponent } from 'preact';
import type { Project, Role } from '../../api/types.ts';
import { lazyPage } from '../../ui/lazy-page.ts';
import { AgentDetail } from './agent-detail.tsx';
import { ProjectAgents } from './agents.tsx';
import { CommandDetail } from './command-detail.tsx';
import { ProjectCommands } from './commands.tsx';
import { ProjectOverview } from './overview.tsx';
import { TaskDetail } from './task-detail.tsx';
import { ProjectTasks } from './tasks.tsx';
import { ProjectQueues, ProjectWorkers } from './workers.tsx';

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
  /** The page heading's second half when it differs from the label (detail pages). */
  title?: string;
  /** The lowest project role that sees the link; the server still decides what it answers. */
  minRole?: Role;
  component: FunctionComponent<ProjectPageProps>;
}

// Fetched when first shown (ui/lazy-page.ts): only project admins open them, and seldom (members see the
// notification channels too, now and then).
const ProjectMembers = lazyPage(() => import('./members.tsx').then((m) => m.ProjectMembers));
const ProjectNotifications = lazyPage(() => import('./notifications.tsx').then((m) => m.ProjectNotifications));
// The task explorer's pages an investigation opens now and then: failure groups, bulk jobs, dead letters, a worker.
const ProjectFailures = lazyPage(() => import('./failures.tsx').then((m) => m.ProjectFailures));
const ProjectBulkJobs = lazyPage(() => import('./bulk-jobs.tsx').then((m) => m.ProjectBulkJobs));
const ProjectDeadLetters = lazyPage(() => import('./dead-letters.tsx').then((m) => m.ProjectDeadLetters));
const WorkerDetail = lazyPage(() => import('./worker-detail.tsx').then((m) => m.WorkerDetail));
// Schedules: their next runs, controls, fire history and misfires.
const ProjectSchedules = lazyPage(() => import('./schedules.tsx').then((m) => m.ProjectSchedules));
const ScheduleDetail = lazyPage(() => import('./schedule-detail.tsx').then((m) => m.ScheduleDetail));

export const PROJECT_SECTIONS: ProjectSection[] = [
  { path: '', label: 'Overview', component: ProjectOverview },
  { path: 'agents', label: 'Agents', component: ProjectAgents },
  { path: 'agents/:agent_id', title: 'Agent', component: AgentDetail },
  { path: 'tasks', label: 'Tasks', component: ProjectTasks },
  { path: 'tasks/:engine/:task_id', title: 'Task', component: TaskDetail },
  { path: 'failures', label: 'Failure groups', component: ProjectFailures },
  { path: 'bulk-jobs', label: 'Bulk jobs', component: ProjectBulkJobs },
  { path: 'commands', label: 'Commands', component: ProjectCommands },
  { path: 'commands/:command_id', title: 'Command', component: CommandDetail },
  { path: 'workers', label: 'Workers', component: ProjectWorkers },
  { path: 'workers/:worker', title: 'Worker', component: WorkerDetail },
  { path: 'queues', label: 'Queues', component: ProjectQueues },
  { path: 'schedules', label: 'Schedules', component: ProjectSchedules },
  { path: 'schedules/:schedule_id', title: 'Schedule', component: ScheduleDetail },
  { path: 'dead-letters', label: 'Dead letters', minRole: 'operator', component: ProjectDeadLetters },
  { path: 'notifications', label: 'Notifications', component: ProjectNotifications },
  { path: 'members', label: 'Members', minRole: 'admin', component: ProjectMembers },
];

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
export const roleAtLeast = (have: Role, need: Role): boolean => RANK[have] >= RANK[need];
