// Serves the dashboard embedded in the binary: hashed assets cached for a
// year, index.html never cached, and index.html for any other non-API GET so
// the single-page app can route on the client.
import { logger } from '../lib/log.ts';

const log = logger('dashboard');

type AssetMap = Record<string, string>;
let assets: AssetMap | null | undefined;

async function loadAssets(): Promise<AssetMap | null> {
  if (assets !== undefined) return assets;
  try {
    // Written by build.ts; absent when running from source without a build.
    // @ts-ignore -- the module is generated, so it may not exist at type-check time
    assets = (await import('./dashboard-assets.gen.ts')).ASSETS as AssetMap;
  } catch {
    log.warn('dashboard assets not built; run `bun build.ts --web`');
    assets = null;
  }
  return assets;
}

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'none'; form-action 'self'";

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>svc</title><p>The dashboard is not built into this copy of svc. Run <code>bun build.ts</code>.</p>`;

export async function dashboardResponse(path: string): Promise<Response | null> {
  const map = await loadAssets();
  if (!map) return new Response(NOT_BUILT, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP } });
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
      'content-security-policy': CSP,
    },
  });
}
