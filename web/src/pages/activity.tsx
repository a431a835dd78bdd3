// /activity: the audit trail as a feed. New rows arrive by polling with since_cursor (setTimeout chained after
// each answer, so slow answers never pile up), older pages load with before_cursor, and the filters live in the
// URL so a filtered view can be linked. A 429 pauses polling for as long as the server says.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api, asApiError } from '../api/client.ts';
import type { ActivityItem, ActivityPage, User } from '../api/types.ts';
import { useLive } from '../lib/live.ts';
import { me, projects } from '../session.ts';
import { Badge, Empty, PageHeader, Section, Time } from '../ui/bits.tsx';
import { ErrorNotice } from '../ui/errors.tsx';

const POLL_MS = 5000;
/** While the live stream is up, new rows come by its notices; this slow poll only backs it up. */
const LIVE_POLL_MS = 60_000;
const PAGE = 50;
const PREFIXES = ['auth.', 'user.', 'project.', 'membership.', 'invitation.', 'api_key.', 'audit.', 'setup.', 'agent.'];

const short = (id: string | null) => (id ? id.slice(0, 8) : '');

function summary(meta: Record<string, unknown>): string {
  return Object.entries(meta ?? {})
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ')
    .slice(0, 160);
}

function retryAfter(e: ApiError): number {
  const s = Number((e.details as { retry_after_seconds?: unknown }).retry_after_seconds);
  return Number.isFinite(s) && s > 0 ? s : 60;
}

/** Names for actor ids: "you", and for administrators everyone's name (they may list users). */
function useActorNames(): (id: string | null) => string {
  const [names, setNames] = useState<Map<string, string>>(new Map());
  const self = me.value;
  useEffect(() => {
    if (!self?.is_admin) return;
    api
      .get<User[]>('/users', { limit: 500 })
      .then((users) => setNames(new Map(users.map((u) => [u.id, u.display_name]))))
      .catch(() => {});
  }, [self?.is_admin]);
  return (id) => (!id ? 'svc' : id === self?.id ? 'you' : (names.get(id) ?? `user ${short(id)}`));
}

function Row(props: { item: ActivityItem; actor: string }) {
  const i = props.item;
  return (
    <li class="feed-row">
      <div class="feed-main">
        <code class="feed-action">{i.action}</code>
        {i.result !== 'success' && <Badge tone="bad">{i.result}</Badge>}
        <span class="muted">
          by {props.actor}
          {i.project_slug && (
            <>
              {' '}
              in <a href={`/projects/${i.project_slug}`}>{i.project_slug}</a>
            </>
          )}
          {i.target_type && ` · ${i.target_type} ${short(i.target_id)}`}
          {i.source_ip && ` · ${i.source_ip}`}
        </span>
      </div>
      <div class="feed-side">
        <Time iso={i.occurred_at} />
      </div>
      {Object.keys(i.metadata ?? {}).length > 0 && <div class="feed-meta muted small">{summary(i.metadata)}</div>}
    </li>
  );
}

export function ActivityPage() {
  const { query, route } = useLocation();
  const project = query.project ?? '';
  const prefix = query.action ?? '';
  const actorName = useActorNames();
  const [items, setItems] = useState<ActivityItem[]>([]);
  const [older, setOlder] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [limited, setLimited] = useState<number | null>(null);
  const [live, setLive] = useState(true);
  const liveRef = useRef(true);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const newest = useRef<string | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const pollNow = useRef<() => void>(() => {});
  const filters = { project_slug: project || undefined, action_prefix: prefix || undefined };
  // A notice of new rows asks for them at once (at most every 2 s: the feed allows 60 requests a minute).
  const stream = useLive(project || '*', ['activity'], () => liveRef.current && pollNow.current(), { throttleMs: 2000, fallbackMs: 0 });
  const streamUp = useRef(false);
  streamUp.current = stream === 'live';
  useEffect(() => {
    // The stream went down: back to polling every POLL_MS from now, not after the slow poll's wait.
    if (stream === 'down' && loaded && liveRef.current) pollNow.current();
  }, [stream]);

  /** A 429 pauses for its Retry-After; other failures show and the next poll tries again. */
  const failed = (e: unknown): number => {
    const err = asApiError(e);
    if (err.status === 429) {
      setLimited(retryAfter(err));
      return retryAfter(err) * 1000;
    }
    setError(err);
    return POLL_MS * 3;
  };

  useEffect(() => {
    let stopped = false;
    let ready = false; // the first page arrived; from then on only newer rows are asked for
    setItems([]);
    setOlder(null);
    setLoaded(false);
    setError(null);
    newest.current = null;
    const schedule = (ms: number) => {
      clearTimeout(timer.current);
      if (!stopped && liveRef.current) timer.current = setTimeout(() => void tick(), ms);
    };
    let busy = false; // one request at a time: "Check now" during a poll waits for it, then asks again
    let again = false;
    const tick = async (): Promise<void> => {
      if (stopped) return;
      if (busy) {
        again = true;
        return;
      }
      if (ready && document.visibilityState === 'hidden') return schedule(POLL_MS);
      busy = true;
      try {
        if (!ready) {
          const page = await api.get<ActivityPage>('/activity', { ...filters, limit: PAGE });
          if (stopped) return;
          setItems(page.items);
          setOlder(page.next_before_cursor);
          newest.current = page.newest_cursor;
          ready = true;
          setLoaded(true);
        } else {
          const page = await api.get<ActivityPage>('/activity', {
            ...filters,
            since_cursor: newest.current ?? undefined,
            limit: 200,
          });
          if (stopped) return;
          if (page.items.length > 0) setItems((old) => [...page.items, ...old]);
          newest.current = page.newest_cursor ?? newest.current;
        }
        setError(null);
        setLimited(null);
        schedule(streamUp.current ? LIVE_POLL_MS : POLL_MS);
      } catch (e) {
        if (!stopped) schedule(failed(e));
      } finally {
        busy = false;
      }
      if (again && !stopped) {
        again = false;
        clearTimeout(timer.current);
        return tick();
      }
    };
    pollNow.current = () => {
      clearTimeout(timer.current);
      void tick();
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer.current);
    };
  }, [project, prefix]);

  const toggleLive = () => {
    liveRef.current = !live;
    setLive(!live);
    if (liveRef.current) pollNow.current();
    else clearTimeout(timer.current);
  };

  const loadOlder = async () => {
    if (!older) return;
    setLoadingOlder(true);
    try {
      const page = await api.get<ActivityPage>('/activity', { ...filters, before_cursor: older, limit: PAGE });
      setItems((old) => [...old, ...page.items]);
      setOlder(page.next_before_cursor);
      setError(null);
    } catch (e) {
      failed(e);
    } finally {
      setLoadingOlder(false);
    }
  };

  const setFilter = (next: { project?: string; action?: string }) => {
    const q = new URLSearchParams();
    const p = next.project ?? project;
    const a = next.action ?? prefix;
    if (p) q.set('project', p);
    if (a) q.set('action', a);
    route(`/activity${q.size ? `?${q}` : ''}`, true);
  };

  return (
    <>
      <PageHeader
        title="Activity"
        lead="Everything that changed, newest first: sign-ins, users, projects, members, keys and agents."
        actions={
          <>
            <button type="button" class="secondary" onClick={toggleLive} aria-pressed={!live}>
              {live ? 'Pause live updates' : 'Resume live updates'}
            </button>
            <button type="button" class="secondary" onClick={() => pollNow.current()}>
              Check now
            </button>
          </>
        }
      />
      <form
        class="filters"
        aria-label="Filter the activity"
        onSubmit={(e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget as HTMLFormElement);
          setFilter({ action: String(data.get('action') ?? '').trim() });
        }}
      >
        <div class="field">
          <label for="activity-project">Project</label>
          <select id="activity-project" onChange={(e) => setFilter({ project: (e.currentTarget as HTMLSelectElement).value })}>
            <option value="" selected={!project}>
              All projects
            </option>
            {projects.value.map((p) => (
              <option key={p.slug} value={p.slug} selected={p.slug === project}>
                {p.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="activity-action">Action starts with</label>
          <input id="activity-action" name="action" list="activity-prefixes" defaultValue={prefix} placeholder="e.g. auth." />
          <datalist id="activity-prefixes">
            {PREFIXES.map((p) => (
              <option key={p} value={p} />
            ))}
          </datalist>
        </div>
        <div class="actions">
          <button type="submit" class="secondary">
            Apply
          </button>
          {(project || prefix) && (
            <button type="button" class="link" onClick={() => route('/activity', true)}>
              Clear filters
            </button>
          )}
        </div>
      </form>
      {limited !== null && (
        <div class="notice warn" role="status" data-testid="activity-rate-limited">
          The activity feed allows 60 requests a minute and that limit is reached. Live updates pause for {limited} seconds, then
          resume by themselves.
        </div>
      )}
      <ErrorNotice error={error} />
      <Section title={live ? 'Live feed' : 'Feed (paused)'}>
        {!loaded && !error && limited === null ? (
          <p class="muted">Loading…</p>
        ) : items.length === 0 && loaded ? (
          <Empty title={project || prefix ? 'Nothing matches these filters' : 'No activity yet'}>
            <p>
              {project || prefix
                ? 'Try another project or a shorter action prefix.'
                : 'Actions appear here as people sign in and change things.'}
            </p>
          </Empty>
        ) : (
          <ol class="feed" aria-live="polite" aria-label="Activity, newest first">
            {items.map((i) => (
              <Row key={i.id} item={i} actor={actorName(i.user_id)} />
            ))}
          </ol>
        )}
        {older && (
          <div class="actions">
            <button type="button" class="secondary" onClick={loadOlder} disabled={loadingOlder}>
              {loadingOlder ? 'Loading…' : 'Load older'}
            </button>
          </div>
        )}
      </Section>
    </>
  );
}
