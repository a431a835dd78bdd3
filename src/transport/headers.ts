// Long-poll headers: X-SVC-* names, with the z4j agents' X-Z4J-* names
// accepted as aliases on requests and sent alongside on responses.

/** A request header by its name after the prefix (`Session-Nonce`), X-SVC- first. */
export function agentHeader(request: Request, name: string): string | null {
  return request.headers.get(`x-svc-${name}`) ?? request.headers.get(`x-z4j-${name}`);
}

function both(name: string, value: string): Record<string, string> {
  return { [`x-svc-${name}`]: value, [`x-z4j-${name}`]: value };
}

/** The answering process: the session registry is per process, so agents are pinned to one. */
export const workerHeaders = (): Record<string, string> => both('longpoll-worker', String(process.pid));

/** The canonical UUIDs the agent signs with (read by 1.7+ agents from the connect probe). */
export const identityHeaders = (agentId: string, projectId: string): Record<string, string> => ({
  ...both('agent-id', agentId),
  ...both('project-id', projectId),
});

export const MAX_RUNTIME_FEATURES = 64;
const MAX_FEATURE_CHARS = 64;

/** X-SVC-Runtime-Features: comma-separated, trimmed, de-duplicated; at most 64
 * names of at most 64 characters (longer names are ignored). Null when absent. */
export function parseRuntimeFeatures(header: string | null): string[] | null {
  if (header === null) return null;
  const names: string[] = [];
  for (const part of header.split(',')) {
    const name = part.trim();
    if (name === '' || name.length > MAX_FEATURE_CHARS || names.includes(name)) continue;
    names.push(name);
    if (names.length === MAX_RUNTIME_FEATURES) break;
  }
  return names;
}

const CONTRACT_RE = /^([A-Za-z0-9_.-]{1,64})=1$/;

/** X-SVC-Retry-Contracts: `engine=1` pairs. Any malformed part empties the whole
 * set (fail closed): no retry_task or bulk_retry is delivered then. */
export function parseRetryContracts(header: string | null): Set<string> {
  const engines = new Set<string>();
  if (header === null || header.trim() === '') return engines;
  for (const part of header.split(',')) {
    const m = CONTRACT_RE.exec(part.trim());
    if (!m) return new Set();
    engines.add(m[1]!);
  }
  return engines;
}

const NONCE_RE = /^[\x21-\x7e]{1,128}$/;

/** The session nonce: printable ASCII, 1..128 characters; '' (the shared legacy
 * session) when absent; null when present but unusable. */
export function parseSessionNonce(header: string | null): string | null {
  if (header === null) return '';
  return NONCE_RE.test(header) ? header : null;
}
