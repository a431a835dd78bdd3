// The messages of the live update stream (GET /api/v1/live, a WebSocket), shared
// by the server and the dashboard (web/src/lib/live.ts imports these types).
// Notices say what changed and its ids, never the rows: a page refetches what it
// shows. docs/live-updates.md describes the protocol.

export const NOTICE_TYPES = ['task', 'command', 'agent', 'activity'] as const;
export type NoticeType = (typeof NOTICE_TYPES)[number];

/** Ids carried by one notice at most; past that `more` is set and the page refetches its whole view. */
export const MAX_NOTICE_IDS = 100;

/** What changed in a project (project null: a service-wide activity row, sent to administrators). */
export interface LiveNotice {
  type: NoticeType;
  /** The project's slug (as subscribed), or null. */
  project: string | null;
  project_id: string | null;
  /** task: the engine's task ids; command: command ids; agent: agent ids; activity: audit row ids. */
  ids: string[];
  /** More changed than `ids` lists. */
  more?: true;
  /** When the server sent it (ISO 8601 UTC). */
  at: string;
}

/** `project` is a slug, or `*` for every project the user may read (administrators: also service-wide activity). */
export type ClientMessage =
  | { type: 'subscribe'; project: string; types?: NoticeType[] }
  | { type: 'unsubscribe'; project: string }
  | { type: 'ping' };

export type ServerMessage =
  | { type: 'ready'; worker: number; idle_timeout_seconds: number; max_subscriptions: number }
  | { type: 'subscribed'; project: string; project_id: string | null; types: NoticeType[] }
  | { type: 'unsubscribed'; project: string; reason: 'requested' | 'access_lost' }
  | { type: 'error'; code: 'not_found' | 'bad_message' | 'too_many_subscriptions'; message: string; project?: string }
  | { type: 'pong' }
  /** Notices were dropped (the tab read too slowly): refetch what the page shows. */
  | { type: 'resync' }
  | LiveNotice;

/** Close codes of the stream. */
export const LIVE_CLOSE = {
  /** The server is stopping. */
  going: 1001,
  /** A message that is not JSON, too large, or of no known type. */
  badMessage: 4400,
  /** The session ended (logout, revoked, expired, idle) or the user was deactivated. */
  sessionEnded: 4401,
  /** Nothing received for the idle timeout (the client pings every 25 s). */
  idle: 4408,
} as const;

/** Longest message a client may send. */
export const MAX_CLIENT_MESSAGE_BYTES = 4096;
/** Subscriptions one connection may hold. */
export const MAX_SUBSCRIPTIONS = 32;
