import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { guarded } from '../access/guard.ts';
import { contract } from '../http/contract.ts';
import { jsonResponse } from '../http/errors.ts';
import { AnyObject, Answer, Timestamp } from '../http/schemas.ts';
import type { AppContext } from '../server/context.ts';
import { deepHealth } from './deep.ts';
import { readiness } from './service.ts';
import { systemReport } from './system.ts';

// Signed-in users (keys with health:read), or monitoring with the metrics token.
const SIGNED_IN = { user: { scope: 'health:read' }, metricsToken: true } as const;
const Database = Answer({
  type: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
  version: Type.String(),
  size_bytes: Type.Integer(),
  connections: Type.Integer(),
  checkpoints: Type.Union([Type.Literal('thread'), Type.Literal('inline'), Type.Literal('fallback'), Type.Literal('none')]),
});
const SystemReport = Answer(
  {
    version: Type.String(),
    build_commit: Type.String(),
    agent_protocol: Type.String(),
    runtime: Answer({ bun: Type.String() }),
    os: Answer({ platform: Type.String(), release: Type.String(), arch: Type.String() }),
    pid: Type.Integer(),
    worker: Answer({ index: Type.Integer(), count: Type.Integer() }),
    uptime_seconds: Type.Integer(),
    database: Database,
    packages: Type.Record(Type.String(), Type.String()),
  },
  'SystemReport',
);
const EntryStatus = Type.Union([Type.Literal('ok'), Type.Literal('failed'), Type.Literal('disabled')]);
export const DeepReport = Answer(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('failed')]),
    checked_at: Timestamp,
    worker: Type.Integer(),
    entries: Type.Array(Answer({ name: Type.String(), status: EntryStatus, detail: Type.String(), duration_ms: Type.Integer(), data: AnyObject })),
    coverage: Answer({ checked: Type.Integer(), failed: Type.Integer(), disabled: Type.Integer(), not_covered: Type.Array(Type.String()) }),
  },
  'DeepReport',
);

const Unready = Type.Object({ status: Type.Literal('unready'), reason: Type.Union([Type.Literal('starting'), Type.Literal('database')]) }, { additionalProperties: false });

export const healthRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/health', detail: { tags: ['health'] } })
    // No I/O, no version: load balancers call this constantly.
    .get('', () => ({ status: 'ok' as const }), {
      ...contract({ summary: 'Liveness: the process answers', access: { public: true }, ok: Type.Object({ status: Type.Literal('ok') }, { additionalProperties: false }) }),
    })
    .get(
      '/ready',
      async () => {
        const r = await readiness(ctx);
        return r.ok ? { status: 'ready' as const } : jsonResponse(503, { status: 'unready', reason: r.reason });
      },
      {
        ...contract({
          summary: 'Readiness: startup finished and the database answers within 2 s',
          access: { public: true },
          ok: Type.Object({ status: Type.Literal('ready') }, { additionalProperties: false }),
          answers: { 503: Unready },
        }),
      },
    )
    .get('/system', () => systemReport(ctx), {
      ...guarded(ctx, { summary: 'Version, runtime, operating system, database engine, size and connections, package versions', access: SIGNED_IN, ok: SystemReport }),
    })
    .get(
      '/deep',
      async () => {
        const report = await deepHealth(ctx);
        return report.status === 'ok' ? report : jsonResponse(503, report);
      },
      {
        ...guarded(ctx, {
          summary: "Every subsystem of this process checked within 2 s each; 503 when any failed (the audit entry checks the chain's state row only)",
          access: SIGNED_IN,
          ok: DeepReport,
          answers: { 503: DeepReport },
        }),
      },
    );
