// What one area tells others, without knowing who listens: the agent
// transports report stored task events and liveness changes (after their
// commit: the calls return at once, listeners queue their work), projects
// report new projects and members (inside their transaction, so what others
// add commits with them). The composition root points these at notifications.
import type { Tx } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';

export interface Reactions {
  /** Task events newly stored for a project (duplicates excluded), committed. */
  tasksStored(projectId: string, events: readonly EventRecord[]): void;
  /** An agent that was not online is online again (its liveness or hello committed). */
  agentCameOnline(agentId: string): void;
  /** Agents the offline sweep marked offline (committed). */
  agentsWentOffline(agentIds: readonly string[]): void;
  /** Inside the transaction that created a project. */
  projectCreated(tx: Tx, projectId: string): Promise<void>;
  /** Inside the transaction that made a user a member of a project (grant, invitation, first boot). */
  memberJoined(tx: Tx, projectId: string, userId: string): Promise<void>;
}
