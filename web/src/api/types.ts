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
  LoginAnswer as LoginAnswerSchema,
  Me as MeSchema,
  MfaStatus as MfaStatusSchema,
  PasswordPolicy as PasswordPolicySchema,
  RecoveryCodes as RecoveryCodesSchema,
  Scopes as ScopesSchema,
  SessionPublic,
  TrustedDevice as TrustedDeviceSchema,
} from '../../../src/auth/schemas.ts';
import type { LinkedIdentities as LinkedIdentitiesSchema, SsoConfig as SsoConfigSchema } from '../../../src/auth/sso/schemas.ts';
import type { CommandPage, CommandPublic, CommandStatus } from '../../../src/commands/service.ts';
import type { DeepReport as DeepReportSchema, SystemReport as SystemReportSchema } from '../../../src/health/schemas.ts';
import type * as NotificationSchemas from '../../../src/notifications/schemas.ts';
import type { Unready as UnreadySchema } from '../../../src/health/routes.ts';
import type {
  InvitationAccepted as InvitationAcceptedSchema,
  InvitationMinted as InvitationMintedSchema,
  InvitationPreview as InvitationPreviewSchema,
  Member,
} from '../../../src/projects/schemas.ts';
import type { SetupStatus as SetupStatusSchema } from '../../../src/setup/routes.ts';
import type { InvitationPublic, ProjectPublic, Role } from '../../../src/projects/service.ts';
import type {
  Highlight as HighlightSchema,
  QueuePublic,
  TaskDetail as TaskDetailSchema,
  TaskEventPage as TaskEventPageSchema,
  TaskListItem as TaskListItemSchema,
  TaskPage as TaskPageSchema,
  TaskTree as TaskTreeSchema,
  WorkerDetail as WorkerDetailSchema,
  WorkerPublic,
} from '../../../src/tasks/schemas.ts';
import type * as StatsSchemas from '../../../src/stats/schemas.ts';
import type { BulkItemPage as BulkItemPageSchema, BulkJobPage as BulkJobPageSchema, BulkJobPublic, CreateBulkJob as CreateBulkJobSchema } from '../../../src/bulk/service.ts';
import type { BulkDeleteResult as BulkDeleteResultSchema } from '../../../src/bulk/delete.ts';
import type { PurgeConfirmation as PurgeConfirmationSchema } from '../../../src/commands/operator.ts';
import type { TaskPublic } from '../../../src/tasks/service.ts';
import type { TaskState } from '../../../src/tasks/tables.ts';
import type { UserPublic } from '../../../src/users/service.ts';
import type { SavedViewPublic } from '../../../src/saved-views/schemas.ts';
import type { LookupAnswer as LookupAnswerSchema } from '../../../src/lookup/service.ts';

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
/** A saved view of a dashboard page (GET /projects/{slug}/saved-views). */
export type SavedView = SavedViewPublic;
/** What the Ctrl-K palette looks up in every project the caller sees (GET /lookup). */
export type LookupAnswer = Static<typeof LookupAnswerSchema>;
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
/** POST /auth/login. */
export type LoginAnswer = Static<typeof LoginAnswerSchema>;
/** POST /auth/mfa/enroll-complete and /auth/mfa/recovery-codes/regenerate. */
export type RecoveryCodes = Static<typeof RecoveryCodesSchema>;
/** GET /api-keys/scopes. */
export type ApiKeyScopes = Static<typeof ScopesSchema>;
/** POST /projects/{slug}/invitations. */
export type InvitationMinted = Static<typeof InvitationMintedSchema>;
/** POST /invitations/accept. */
export type InvitationAccepted = Static<typeof InvitationAcceptedSchema>;
/** GET /setup/status. */
export type SetupStatus = Static<typeof SetupStatusSchema>;
/** GET /health/ready's 503 answer. */
export type Unready = Static<typeof UnreadySchema>;
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
/** DELETE /projects/{slug}/notifications/deliveries. */
export type DeliveriesCleared = Static<typeof NotificationSchemas.DeliveriesCleared>;
export type UnreadCount = Static<typeof NotificationSchemas.UnreadCount>;

// --- single sign-on (src/auth/sso/schemas.ts) ---
/** GET /auth/sso/config: what the sign-in page offers. */
export type SsoConfig = Static<typeof SsoConfigSchema>;
/** GET /auth/sso/identities: your identities at identity providers. */
export type LinkedIdentities = Static<typeof LinkedIdentitiesSchema>;
export type LinkedIdentity = LinkedIdentities['identities'][number];

// --- the task explorer (src/tasks/schemas.ts) ---
/** A row of GET /tasks: the task, with `q` its matches field by field. */
export type TaskListItem = Static<typeof TaskListItemSchema>;
/** One field's search matches: plain text and [start, end) offsets into it (rendered as text nodes). */
export type Highlight = Static<typeof HighlightSchema>;
/** GET /tasks/{engine}/{task_id}/tree. */
export type TaskTree = Static<typeof TaskTreeSchema>;
export type TaskTreeNode = TaskTree['nodes'][number];
/** GET /tasks/{engine}/{task_id}/events: the raw events, keyset-paged. */
export type TaskEventPage = Static<typeof TaskEventPageSchema>;
/** GET /workers/{worker}: the worker with its queues and task counts. */
export type WorkerDetail = Static<typeof WorkerDetailSchema>;
export const TASK_SORTS = ['created_at', 'received_at', 'started_at', 'finished_at', 'runtime_ms', 'name', 'state'] as const;
export type TaskSort = (typeof TASK_SORTS)[number];
export const PRIORITIES = ['critical', 'high', 'normal', 'low'] as const;

// --- statistics (src/stats/schemas.ts) ---
export type StatsWindow = StatsSchemas.WindowName;
export const STATS_WINDOWS: readonly StatsWindow[] = ['1h', '6h', '24h', '7d', '30d'];
/** GET /projects/{slug}/stats. */
export type ProjectStats = StatsSchemas.ProjectStats;
export type AttentionItem = StatsSchemas.AttentionItem;
export type FailingTask = ProjectStats['failing_tasks'][number];
/** GET /projects/{slug}/trends. */
export type Trends = StatsSchemas.Trends;
export type TrendPoint = Trends['points'][number];
/** GET /home. */
export type HomeSummary = StatsSchemas.HomeSummary;
export type HomeProject = HomeSummary['projects'][number];
/** GET /projects/{slug}/failure-groups and a group's failed tasks. */
export type FailureGroups = StatsSchemas.FailureGroups;
export type FailureGroup = FailureGroups['groups'][number];
export type FailedTaskPage = StatsSchemas.FailedTaskPage;

// --- bulk jobs, bulk delete and the purge confirmation (src/bulk, src/commands/operator.ts) ---
export type BulkJob = BulkJobPublic;
export type BulkJobPage = BulkJobPageSchema;
export type BulkItemPage = BulkItemPageSchema;
export type BulkItem = BulkItemPage['items'][number];
export type BulkDeleteResult = BulkDeleteResultSchema;
/** POST /bulk-jobs: a retry over a filter of GET /tasks's fields plus task_ids (frozen at creation). */
export type CreateBulkJob = CreateBulkJobSchema;
export type BulkFilter = CreateBulkJob['filter'];
export type PurgeConfirmation = PurgeConfirmationSchema;

// Schedules (src/schedules/schemas.ts): the inventory, fires, misfires and the next runs in two zones.
import type * as ScheduleSchemas from '../../../src/schedules/schemas.ts';
export type Schedule = Static<typeof ScheduleSchemas.SchedulePublic>;
export type SchedulePage = Static<typeof ScheduleSchemas.SchedulePage>;
export type ScheduleFire = Static<typeof ScheduleSchemas.FirePublic>;
export type ScheduleMisfireList = Static<typeof ScheduleSchemas.MisfireList>;
export type ScheduleControl = Static<typeof ScheduleSchemas.ControlResult>;
export type ScheduleUpcoming = Static<typeof ScheduleSchemas.UpcomingList>;
export type ProjectScheduleTimezone = Static<typeof ScheduleSchemas.ProjectTimezone>;
