// Shapes of the API answers the dashboard reads (see docs/identity.md and GET /api/v1/openapi.json). Where the
// server's services export the answer's type, it is imported from there (type-only: nothing of the server is
// bundled), so the two cannot drift apart.
import type { AgentHealthSample, AgentMintResponse, AgentPublic } from '../../../src/agents/service.ts';
import type { ApiKeyPublic } from '../../../src/auth/api-keys.ts';
import type { CommandPage, CommandPublic, CommandStatus } from '../../../src/commands/service.ts';
import type { InvitationPublic, ProjectPublic, Role } from '../../../src/projects/service.ts';
import type { QueueRow, TaskPublic, WorkerRow } from '../../../src/tasks/service.ts';
import type { TaskState } from '../../../src/tasks/tables.ts';
import type { UserPublic } from '../../../src/users/service.ts';

export type { Role };
export type User = UserPublic;
export type Project = ProjectPublic;
export type Invitation = InvitationPublic;
export type ApiKey = ApiKeyPublic;
export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];

export type Agent = AgentPublic;
export type MintedAgent = AgentMintResponse;
export type HealthSample = AgentHealthSample;
export type Command = CommandPublic;
export type { CommandPage, CommandStatus, TaskState };
export type Task = TaskPublic;
export type Worker = WorkerRow;
export type Queue = QueueRow;

export const TASK_STATES: readonly TaskState[] = ['pending', 'received', 'started', 'success', 'failure', 'retry', 'revoked', 'rejected', 'unknown'];
export const COMMAND_STATUSES: readonly CommandStatus[] = [
  'pending',
  'dispatched',
  'completed',
  'failed',
  'timeout',
  'cancelled',
  'buffered',
  'buffer_expired',
];

export interface TaskPage {
  items: Task[];
  next_cursor: string | null;
}

/** GET /tasks/{engine}/{task_id}: the task with its events, oldest first. */
export interface TaskDetail extends Task {
  events: { id: string; kind: string; occurred_at: string; agent_id: string; payload: Record<string, unknown> }[];
}

export interface Me extends User {
  mfa: { enrolled: boolean; pending: boolean; fresh: boolean };
  memberships: { project_id: string; project_slug: string; project_name: string; role: Role }[];
}

export interface Membership {
  id: string;
  user_id: string;
  project_id: string;
  user_email: string;
  user_display_name: string;
  role: Role;
  created_at: string;
  updated_at: string;
}

export interface InvitationPreview {
  email: string;
  role: Role;
  project_slug: string;
  project_name: string;
  expires_at: string;
}

export interface Session {
  id: string;
  issued_at: string;
  last_seen_at: string;
  expires_at: string;
  ip: string | null;
  user_agent: string | null;
  is_current: boolean;
}

export interface TrustedDevice {
  id: string;
  label: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
  active: boolean;
}

export interface MfaStatus {
  enrolled: boolean;
  enrolled_at: string | null;
  pending_enrolment: boolean;
  remaining_recovery_codes: number;
}

export interface PasswordPolicy {
  min_length: number;
  max_length: number;
  required_character_classes_below_16: number;
  character_classes: string[];
  common_passwords_refused: boolean;
}

export interface ActivityItem {
  id: string;
  project_id: string | null;
  project_slug: string | null;
  user_id: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  result: string;
  outcome: string;
  metadata: Record<string, unknown>;
  source_ip: string | null;
  occurred_at: string;
}

export interface ActivityPage {
  items: ActivityItem[];
  next_before_cursor: string | null;
  newest_cursor: string | null;
}

export interface AuditVerification {
  clean: boolean;
  rows_verified: number;
  frozen_rows: number;
  first_bad_row_id: string | null;
  findings: unknown[];
  duration_ms: number;
}

export interface Versions {
  version: string;
  build_commit: string;
  agent_protocol: string | number;
  runtime: { bun: string };
}
