// Serves the dashboard embedded in the binary: hashed assets cached for a
// year, index.html never cached, and index.html for any other non-API GET so
// the single-page app can route on the client.
import { logger } from '../lib/log.ts';

const log = logger('dashboard');

/** Scripts from the dashboard's own files, and the inline scripts these hashes name (`'sha256-…'`). */
const cspAllowing = (inlineScripts: string[]) =>
  `default-src 'self'; script-src ${["'self'", ...inlineScripts].join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; form-action 'self'`;

interface Built {
  /** URL path -> embedded file. */
  assets: Record<string, string>;
  /** index.html's CSP: its one inline script (the early requests) is allowed by its hash. */
  csp: string;
}
let built: Built | null | undefined;

async function loadBuilt(): Promise<Built | null> {
  if (built !== undefined) return built;
  try {
    // Written by build.ts; absent when running from source without a build.
    // @ts-ignore -- the module is generated, so it may not exist at type-check time
    const gen = await import('./dashboard-assets.gen.ts');
    built = { assets: gen.ASSETS as Record<string, string>, csp: cspAllowing([gen.INLINE_SCRIPT_HASH as string]) };
  } catch {
    log.warn('dashboard assets not built; run `bun build.ts --web`');
    built = null;
  }
  return built;
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>svc</title><p>The dashboard is not built into this copy of svc. Run <code>bun build.ts</code>.</p>`;

export async function dashboardResponse(path: string): Promise<Response | null> {
  const b = await loadBuilt();
  if (!b) return new Response(NOT_BUILT, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': cspAllowing([]) } });
  const map = b.assets;
  const file = path !== '/index.html' ? map[path] : undefined;
  if (file) {
    return new Response(Bun.file(file), { headers: { 'cache-control': 'public, max-age=31536000, immutable' } });
  }
  // Missing files under /assets/ are 404s, not the app shell.
  if (path.startsWith('/assets/')) return null;
  const index = map['/index.html'];
  if (!index) return null;
  return new Response(Bun.file(index), {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-cache, no-store, must-revalidate',
      'content-security-policy': b.csp,
    },
  });
}
