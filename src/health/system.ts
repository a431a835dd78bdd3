// GET /api/v1/health/system: what this svc is and runs on (the public
// liveness route carries no version by design; this one needs a caller).
import type { Static } from '@sinclair/typebox';
import { arch, platform, release } from 'node:os';
import { installedVersions } from '../admin/versions.ts';
import { databaseInfo } from '../db/info.ts';
import type { AppContext } from '../server/context.ts';
import type { SystemReport as SystemReportSchema } from './schemas.ts';

type SystemReport = Static<typeof SystemReportSchema>;

export async function systemReport(ctx: AppContext): Promise<SystemReport> {
  const v = installedVersions();
  return {
    version: v.version,
    build_commit: v.build_commit,
    agent_protocol: v.agent_protocol,
    runtime: v.runtime,
    os: { platform: platform(), release: release(), arch: arch() },
    pid: process.pid,
    worker: ctx.worker,
    uptime_seconds: Math.round(process.uptime()),
    database: await databaseInfo(ctx.db),
    packages: v.packages,
  };
}
