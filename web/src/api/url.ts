// How a GET to the API is named and sent, shared by the client and index.html's early requests (api/early.ts),
// so an early answer is found under the URL the client asks for.

export type Query = Record<string, string | number | boolean | undefined | null>;

/** A GET as the arguments of `api.get`: the path below /api/v1 and its query. */
export type ApiGet = [path: string, query?: Query];

export const ACCEPT_JSON = { accept: 'application/json' } as const;

/** Empty query values are left out, as the filters' "any" choices. */
export function apiUrl(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `/api/v1${path}${qs ? `?${qs}` : ''}`;
}
