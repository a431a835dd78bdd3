// The answers of GET /api/v1/health/system and /api/v1/health/deep (the deep report also with 503, when an
// entry failed). Built by src/health/system.ts and src/health/deep.ts; the dashboard's System page reads their
// types (web/src/api/types.ts).
import { Type } from '@sinclair/typebox';
import { AnyObject, Answer, Timestamp } from '../http/schemas.ts';

export const SystemDatabase = Answer({
  type: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
  version: Type.String(),
  size_bytes: Type.Integer(),
  connections: Type.Integer(),
  checkpoints: Type.Union([Type.Literal('thread'), Type.Literal('inline'), Type.Literal('fallback'), Type.Literal('none')]),
});

export const SystemReport = Answer(
  {
    version: Type.String(),
    build_commit: Type.String(),
    agent_protocol: Type.String(),
    runtime: Answer({ bun: Type.String() }),
    os: Answer({ platform: Type.String(), release: Type.String(), arch: Type.String() }),
    pid: Type.Integer(),
    worker: Answer({ index: Type.Integer(), count: Type.Integer() }),
    uptime_seconds: Type.Integer(),
    database: SystemDatabase,
    packages: Type.Record(Type.String(), Type.String()),
  },
  'SystemReport',
);

/** `disabled`: the subsystem is not configured (the audit forwarder without a URL, WAL checkpoints on PostgreSQL). */
export const DeepEntryStatus = Type.Union([Type.Literal('ok'), Type.Literal('failed'), Type.Literal('disabled')]);

export const DeepEntry = Answer({
  name: Type.String(),
  status: DeepEntryStatus,
  /** What was found; on failure, why. */
  detail: Type.String(),
  duration_ms: Type.Integer(),
  data: AnyObject,
});

export const DeepReport = Answer(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('failed')]),
    checked_at: Timestamp,
    worker: Type.Integer(),
    entries: Type.Array(DeepEntry),
    coverage: Answer({ checked: Type.Integer(), failed: Type.Integer(), disabled: Type.Integer(), not_covered: Type.Array(Type.String()) }),
  },
  'DeepReport',
);
