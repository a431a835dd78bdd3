// Where changes enter the live stream: the reactions other areas already report
// (ctx.reactions: task events stored, agents online and offline, commands changed,
// audit rows appended) become small signals on the bus, merged per (type,
// project) over SVC_LIVE_COALESCE_MS before they leave this process, so the bus
// carries a handful of signals a second whatever the ingest rate. The areas that
// change things know nothing of the stream.
import { findAgent } from '../agents/service.ts';
import type { AuditRow } from '../audit/canonical.ts';
import { commandProjectOf } from '../commands/service.ts';
import type { Db } from '../db/connect.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { Reactions } from '../platform/reactions.ts';
import { MAX_SIGNAL_BYTES, type SignalBus } from '../signals/index.ts';
import { Coalescer, type Change } from './coalesce.ts';
import type { NoticeType } from './protocol.ts';

const log = logger('live');

export const LIVE_CHANNEL = 'live';

/** What travels on the bus: a merged change, or word that someone's access may have changed. */
export type LiveSignal =
  | { k: 'change'; t: NoticeType; p: string | null; ids: string[]; more?: true }
  | { k: 'access'; user?: string; project?: string; session?: string };

/** Room for the ids in one signal (the rest of the envelope is small). */
const IDS_BUDGET = MAX_SIGNAL_BYTES - 400;

export class LivePublisher {
  private readonly coalescer: Coalescer;

  constructor(
    private readonly bus: SignalBus,
    windowMs: number,
  ) {
    this.coalescer = new Coalescer(windowMs, (c) => this.send(c));
  }

  change(type: NoticeType, projectId: string | null, ids: readonly string[]): void {
    if (ids.length > 0) this.coalescer.add(type, projectId, ids);
  }

  access(who: { user?: string; project?: string; session?: string }): void {
    this.bus.publish(LIVE_CHANNEL, { k: 'access', ...who } satisfies LiveSignal);
  }

  private send(c: Change): void {
    let ids = c.ids;
    let more = c.more;
    // Long task ids could outgrow a NOTIFY payload: fewer ids, and `more` tells pages to refetch.
    while (ids.length > 0 && Buffer.byteLength(JSON.stringify(ids), 'utf8') > IDS_BUDGET) {
      ids = ids.slice(0, Math.floor(ids.length / 2));
      more = true;
    }
    this.bus.publish(LIVE_CHANNEL, { k: 'change', t: c.type, p: c.projectId, ids, ...(more ? { more: true as const } : {}) } satisfies LiveSignal);
  }

  clear(): void {
    this.coalescer.clear();
  }
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Audit rows whose change may take a reader's access away (or give some). */
function accessOf(row: AuditRow): { user?: string; project?: string; session?: string } | null {
  if (row.target_type === 'membership') return { user: text(row.metadata.user_id), project: row.project_id ?? undefined };
  if (row.target_type === 'user') return { user: row.target_id };
  if (row.target_type === 'session') return { session: row.target_id };
  if (row.action === 'project.archived' && row.project_id) return { project: row.project_id };
  return null;
}

/** The live stream's side of ctx.reactions. */
export function liveReactions(publisher: LivePublisher, db: Db): Partial<Reactions> {
  const agentsChanged = (agentIds: readonly string[]) =>
    void Promise.all(agentIds.map((id) => findAgent(db, id))).then(
      (agents) => {
        const byProject = new Map<string, string[]>();
        for (const a of agents) if (a) byProject.set(a.project_id, [...(byProject.get(a.project_id) ?? []), a.id]);
        for (const [projectId, ids] of byProject) publisher.change('agent', projectId, ids);
      },
      (e) => log.warn({ err: describeError(e).message }, 'reading agents for a live notice failed'),
    );
  return {
    tasksStored: (projectId, events) => {
      const ids = new Set<string>();
      for (const e of events) if (e.taskId !== '') ids.add(e.taskId);
      if (ids.size > 0) publisher.change('task', projectId, [...ids]);
    },
    agentCameOnline: (agentId) => agentsChanged([agentId]),
    agentsWentOffline: (agentIds) => agentsChanged(agentIds),
    commandsChanged: (projectId, commandIds) => {
      if (projectId !== null) return publisher.change('command', projectId, commandIds);
      // Sweeps (timeouts, expiries) know the ids only.
      void Promise.all(commandIds.map(async (id) => [id, await commandProjectOf(db, id)] as const)).then(
        (pairs) => {
          for (const [id, project] of pairs) if (project) publisher.change('command', project, [id]);
        },
        (e) => log.warn({ err: describeError(e).message }, 'reading commands for a live notice failed'),
      );
    },
    auditAppended: (row) => {
      publisher.change('activity', row.project_id, [row.id]);
      if (row.target_type === 'agent' && row.project_id) publisher.change('agent', row.project_id, [row.target_id]);
      const access = accessOf(row);
      if (access) publisher.access(access);
    },
  };
}
