// Shapes of the API answers the dashboard reads: the TypeBox schemas the server's routes declare in
// /api/v1/openapi.json, imported type-only (nothing of the server is bundled). A changed answer shape
// breaks the type check of the dashboard (scripts/test runs it first), not a page.
import type { Static } from '@sinclair/typebox';
import type { ActivityItem as ActivityItemSchema, ActivityPage as ActivityPageSchema } from '../../../src/activity/service.ts';
import type { Settings as SettingsSchema } from '../../../src/admin/schemas.ts';
import type { UpdateCheck as UpdateCheckSchema, Versions as VersionsSchema } from '../../../src/admin/versions.ts';
import type { AgentHealthSample, AgentMintResponse, AgentPublic } from '../../../src/agents/service.ts';
import type { AuditVerification as AuditVerificationSchema } from '../../../src/audit/routes.ts';
import type {
  ApiKeyPublic,
  Me as MeSchema,
  MfaStatus as MfaStatusSchema,
  PasswordPolicy as PasswordPolicySchema,
  SessionPublic,
  TrustedDevice as TrustedDeviceSchema,
} from '../../../src/auth/schemas.ts';
import type { LinkedIdentities as LinkedIdentitiesSchema, SsoConfig as SsoConfigSchema } from '../../../src/auth/sso/schemas.ts';
import type { CommandPage, CommandPublic, CommandStatus } from '../../../src/commands/service.ts';
import type { DeepReport as DeepReportSchema, SystemReport as SystemReportSchema } from '../../../src/health/schemas.ts';
import type * as NotificationSchemas from '../../../src/notifications/schemas.ts';
import type { InvitationPreview as InvitationPreviewSchema, Member } from '../../../src/projects/schemas.ts';
import type { InvitationPublic, ProjectPublic, Role } from '../../../src/projects/service.ts';
import type { QueuePublic, TaskDetail as TaskDetailSchema, TaskPage as TaskPageSchema, WorkerPublic } from '../../../src/tasks/schemas.ts';
import type { TaskPublic } from '../../../src/tasks/service.ts';
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
export type Worker = Static<typeof WorkerPublic>;
export type Queue = Static<typeof QueuePublic>;

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

export type TaskPage = Static<typeof TaskPageSchema>;
/** GET /tasks/{engine}/{task_id}: the task with its events, oldest first. */
export type TaskDetail = Static<typeof TaskDetailSchema>;
export type Me = Static<typeof MeSchema>;
export type Membership = Member;
export type InvitationPreview = Static<typeof InvitationPreviewSchema>;
export type Session = Static<typeof SessionPublic>;
export type TrustedDevice = Static<typeof TrustedDeviceSchema>;
export type MfaStatus = Static<typeof MfaStatusSchema>;
export type PasswordPolicy = Static<typeof PasswordPolicySchema>;
export type ActivityItem = Static<typeof ActivityItemSchema>;
export type ActivityPage = Static<typeof ActivityPageSchema>;
export type AuditVerification = Static<typeof AuditVerificationSchema>;
export type Versions = Static<typeof VersionsSchema>;

// --- administration and health (src/admin, src/health) ---
/** POST /admin/system/versions/check: the packages with newer releases (empty: up to date). */
export type UpdateCheck = Static<typeof UpdateCheckSchema>;
/** GET /admin/settings: every effective setting, secrets masked by the server. */
export type Settings = Static<typeof SettingsSchema>;
export type Setting = Settings['settings'][number];
/** GET /health/system. */
export type SystemReport = Static<typeof SystemReportSchema>;
/** GET /health/deep (also the body of its 503, when an entry failed). */
export type DeepReport = Static<typeof DeepReportSchema>;
export type DeepEntry = DeepReport['entries'][number];

// --- notifications (src/notifications/schemas.ts) ---
export type Channel = NotificationSchemas.ChannelPublic;
export type ChannelType = Channel['type'];
export type ChannelTestResult = NotificationSchemas.ChannelTestResult;
export type Subscription = NotificationSchemas.SubscriptionPublic;
export type DefaultSubscription = NotificationSchemas.DefaultSubscriptionPublic;
export type Filters = Subscription['filters'];
export type Priority = NonNullable<Filters['priority']>[number];
export type Trigger = NotificationSchemas.Trigger;
export type InboxItem = NotificationSchemas.InboxItem;
export type InboxPage = NotificationSchemas.InboxPage;
export type Delivery = NotificationSchemas.DeliveryPublic;
export type DeliveryPage = NotificationSchemas.DeliveryPage;
export type UnreadCount = Static<typeof NotificationSchemas.UnreadCount>;

// --- single sign-on (src/auth/sso/schemas.ts) ---
/** GET /auth/sso/config: what the sign-in page offers. */
export type SsoConfig = Static<typeof SsoConfigSchema>;
/** GET /auth/sso/identities: your identities at identity providers. */
export type LinkedIdentities = Static<typeof LinkedIdentitiesSchema>;
export type LinkedIdentity = LinkedIdentities['identities'][number];
