// How a GET to the API is named, sent and read, shared by the client and index.html's early requests
// (api/early.ts), so an early answer is found under the URL the client asks for and reads the same.

export type Query = Record<string, string | number | boolean | undefined | null>;

/** A GET as the arguments of `api.get`: the path below /api/v1 and its query. */
export type ApiGet = [path: string, query?: Query];

/** The bell's count of unread inbox rows (ui/bell.tsx): every signed-in page asks for it first thing. */
export const UNREAD_COUNT_PATH = '/user/notifications/unread-count';

export const ACCEPT_JSON = { accept: 'application/json' } as const;

/** What the client reads of an answer: the status, and the body read in full. */
export interface Answer {
  status: number;
  text: string;
}

export const answerOf = async (res: Response): Promise<Answer> => ({ status: res.status, text: await res.text() });

/** Empty query values are left out, as the filters' "any" choices. */
export function apiUrl(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `/api/v1${path}${qs ? `?${qs}` : ''}`;
}
