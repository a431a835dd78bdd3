// What one area tells others, without knowing who listens: the agent
// transports report stored task events and liveness changes (after their
// commit: the calls return at once, listeners queue their work), projects
// report new projects and members (inside their transaction, so what others
// add commits with them), commands report state changes and the audit log
// every row it appends (after commit). The composition root points these at
// notifications and at the live dashboard stream (combineReactions).
import type { AuditRow } from '../audit/canonical.ts';
import type { Tx } from '../db/connect.ts';
import type { EventRecord } from '../ingest/events.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';

const log = logger('reactions');

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
  /** Commands whose state changed (issued, claimed, answered, timed out, expired), committed; `projectId` null
   * when the caller knows only the ids (sweeps). Optional, as is what follows: listeners that do not care leave
   * them out. */
  commandsChanged?(projectId: string | null, commandIds: readonly string[]): void;
  /** An audit row committed (the activity feed's rows, membership and user changes among them). */
  auditAppended?(row: AuditRow): void;
}

/** One Reactions that tells each part in turn. A failing listener of a committed change is logged and the others
 * still hear it; the in-transaction ones (projectCreated, memberJoined) run in order and fail the transaction. */
export function combineReactions(...parts: Partial<Reactions>[]): Reactions {
  const each = <K extends keyof Reactions>(name: K, call: (r: Partial<Reactions>) => void) => {
    for (const r of parts) {
      if (!r[name]) continue;
      try {
        call(r);
      } catch (e) {
        log.error({ reaction: name, err: describeError(e) }, 'a reaction listener failed');
      }
    }
  };
  return {
    tasksStored: (projectId, events) => each('tasksStored', (r) => r.tasksStored!(projectId, events)),
    agentCameOnline: (agentId) => each('agentCameOnline', (r) => r.agentCameOnline!(agentId)),
    agentsWentOffline: (agentIds) => each('agentsWentOffline', (r) => r.agentsWentOffline!(agentIds)),
    commandsChanged: (projectId, ids) => each('commandsChanged', (r) => r.commandsChanged!(projectId, ids)),
    auditAppended: (row) => each('auditAppended', (r) => r.auditAppended!(row)),
    projectCreated: async (tx, projectId) => {
      for (const r of parts) await r.projectCreated?.(tx, projectId);
    },
    memberJoined: async (tx, projectId, userId) => {
      for (const r of parts) await r.memberJoined?.(tx, projectId, userId);
    },
  };
}
