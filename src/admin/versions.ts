// Installed versions, and the comparison with the release manifest at
// SVC_VERSION_CHECK_URL (fetched through the guarded client; nothing is
// installed here: `svc upgrade --apply` is src/admin/upgrade.ts). The manifest
// (docs/operations.md, "Upgrading"):
//   {"schema": 1, "packages": {"<name>": "<semver>"},
//    "binaries": {"<os>-<arch>": {"url": "...", "sha256": "<hex>", "size": <bytes>}}}
// `binaries` names the executables of the release `packages.svc`; the version
// check reads only `packages`.
import { Type, type Static } from '@sinclair/typebox';
import pkg from '../../package.json' with { type: 'json' };
import { Answer, Timestamp } from '../http/schemas.ts';
import { ApiError } from '../http/errors.ts';
import { guardedFetchBytes } from '../outbound/client.ts';
import { nowMs } from '../lib/clock.ts';
import { BUILD_COMMIT, PROTOCOL_VERSION, VERSION } from '../version.ts';

export const Versions = Answer(
  {
    version: Type.String(),
    build_commit: Type.String(),
    dashboard_commit: Type.String(),
    agent_protocol: Type.String(),
    runtime: Answer({ bun: Type.String() }),
    packages: Type.Record(Type.String(), Type.String()),
  },
  'Versions',
);

export function installedVersions(): Static<typeof Versions> {
  const deps = pkg.dependencies as Record<string, string>;
  return {
    version: VERSION,
    build_commit: BUILD_COMMIT,
    dashboard_commit: BUILD_COMMIT,
    agent_protocol: PROTOCOL_VERSION,
    runtime: { bun: Bun.version },
    packages: { svc: VERSION, ...Object.fromEntries(Object.entries(deps).map(([k, v]) => [k, v.replace(/^[^\d]*/, '')])) },
  };
}

/** Compares dotted versions numerically (pre-release suffixes count as further numbers). */
export const compareVersions = (a: string, b: string): number => {
  const pa = a.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};

/** The largest manifest read. */
export const MANIFEST_MAX_BYTES = 64 * 1024;

/** A fetched release manifest: the exact bytes (what a signature covers) and the parsed object. */
export type FetchedManifest = { bytes: Uint8Array<ArrayBuffer>; manifest: Record<string, unknown> };

/** Fetches and parses the manifest; failures are 502 `check_failed` with a message naming neither the URL nor an address. */
export async function fetchManifest(url: string, allowHttp: boolean): Promise<FetchedManifest> {
  if (url === '') throw new ApiError(404, 'check_disabled', 'the version check is off (SVC_VERSION_CHECK_URL is empty)');
  const res = await guardedFetchBytes(url, { method: 'GET', headers: { accept: 'application/json' }, maxResponseBytes: MANIFEST_MAX_BYTES, timeoutMs: 10_000, allowHttp });
  if (!res.ok) throw new ApiError(502, 'check_failed', `could not fetch the release manifest (${res.reason})`, { reason: res.reason });
  if (res.status !== 200) throw new ApiError(502, 'check_failed', `the release manifest answered HTTP ${res.status}`);
  if (res.truncated) throw new ApiError(502, 'check_failed', `the release manifest is larger than ${MANIFEST_MAX_BYTES} bytes`);
  let manifest: unknown;
  try {
    manifest = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(res.bytes));
  } catch {
    throw new ApiError(502, 'check_failed', 'the release manifest is not JSON');
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) throw new ApiError(502, 'check_failed', 'the release manifest is not a JSON object');
  return { bytes: res.bytes, manifest: manifest as Record<string, unknown> };
}

const UpdateInfo = Answer({ name: Type.String(), installed: Type.String(), latest: Type.String() });
export type UpdateInfo = Static<typeof UpdateInfo>;
export const UpdateCheck = Answer({ checked_at: Timestamp, cached: Type.Boolean(), updates: Type.Array(UpdateInfo) }, 'UpdateCheck');

let cache: { at: number; url: string; result: { checked_at: string; updates: UpdateInfo[] } } | null = null;
const CACHE_MS = 3600_000;

/** The packages of `manifest` newer than the installed ones. */
export function newerPackages(manifest: Record<string, unknown>): UpdateInfo[] {
  const latest = manifest.packages && typeof manifest.packages === 'object' ? (manifest.packages as Record<string, unknown>) : {};
  const installed = installedVersions().packages as Record<string, string>;
  return Object.entries(latest)
    .filter((e): e is [string, string] => typeof e[1] === 'string' && /^\d+(\.\d+)*/.test(e[1]) && Object.hasOwn(installed, e[0]))
    .filter(([name, v]) => compareVersions(v, installed[name]!) > 0)
    .map(([name, v]) => ({ name, installed: installed[name]!, latest: v }));
}

export async function checkForUpdates(url: string, allowHttp: boolean): Promise<Static<typeof UpdateCheck>> {
  if (url === '') throw new ApiError(404, 'check_disabled', 'the version check is off (SVC_VERSION_CHECK_URL is empty)');
  if (cache && cache.url === url && nowMs() - cache.at < CACHE_MS) return { ...cache.result, cached: true };
  const { manifest } = await fetchManifest(url, allowHttp);
  const result = { checked_at: new Date(nowMs()).toISOString(), updates: newerPackages(manifest) };
  cache = { at: nowMs(), url, result };
  return { ...result, cached: false };
}
