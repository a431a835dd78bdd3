// The metrics bearer token: what /metrics (and, for monitoring, the deep and
// system health reports) accept, compared in constant time.
import type { Config } from '../config/load.ts';
import { safeEqual } from '../lib/crypto.ts';

export function bearsMetricsToken(config: Pick<Config, 'SVC_METRICS_AUTH_TOKEN'>, request: Request): boolean {
  const [scheme, token] = (request.headers.get('authorization') ?? '').trim().split(/\s+/);
  const expected = config.SVC_METRICS_AUTH_TOKEN;
  return scheme?.toLowerCase() === 'bearer' && !!token && expected !== '' && safeEqual(token, expected);
}
