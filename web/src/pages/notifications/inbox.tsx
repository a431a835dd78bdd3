// The inbox the bell opens (a chunk of its own, ui/bell.tsx loads it): the newest rows first, a page at a time,
// unread ones marked; each links to what it is about (data.path: the task or the agent page) and is marked read
// when followed; one or all can be marked read here.
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import type { InboxItem, InboxPage } from '../../api/types.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { projects } from '../../session.ts';
import { Empty, Time } from '../../ui/bits.tsx';
import { unread } from '../../ui/bell.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';

const PAGE = 20;

/** Where a row leads: its data.path when it is one of the dashboard's own paths. */
const pathOf = (item: InboxItem): string | null => {
  const path = item.data.path;
  return typeof path === 'string' && path.startsWith('/') && !path.startsWith('//') ? path : null;
};

function Row(props: { item: InboxItem; onRead: (item: InboxItem) => Promise<void>; onFollow: () => void }) {
  const { item } = props;
  const path = pathOf(item);
  const isUnread = item.read_at === null;
  const project = projects.value.find((p) => p.id === item.project_id);
  return (
    <li class={isUnread ? 'inbox-row unread' : 'inbox-row'} data-testid="inbox-item">
      <div class="inbox-main">
        {isUnread && <span class="unread-dot" title="Unread" />}
        {path ? (
          <a
            href={path}
            onClick={() => {
              if (isUnread) void props.onRead(item).catch(() => {});
              props.onFollow();
            }}
          >
            {item.title}
          </a>
        ) : (
          <strong>{item.title}</strong>
        )}
        {isUnread && <span class="visually-hidden"> (unread)</span>}
      </div>
      {item.body && <p class="inbox-body">{item.body}</p>}
      <p class="muted small inbox-meta">
        {project?.name ?? item.project_slug} · <Time iso={item.created_at} />
        {isUnread && (
          <>
            {' · '}
            <button type="button" class="link" aria-label={`Mark “${item.title}” read`} onClick={() => void props.onRead(item)}>
              Mark read
            </button>
          </>
        )}
      </p>
    </li>
  );
}

export function InboxContent(props: { onClose: () => void }) {
  const [unreadOnly, setUnreadOnly] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [readIds, setReadIds] = useState<ReadonlySet<string>>(new Set());
  const page = usePaged<InboxItem>(
    async (cursor) => {
      const r = await api.get<InboxPage>('/user/notifications', { limit: PAGE, cursor, unread_only: unreadOnly || undefined });
      unread.value = r.unread;
      return r;
    },
    [unreadOnly],
  );
  const act = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(asApiError(e));
    }
  };
  const markRead = (item: InboxItem) =>
    act(async () => {
      await api.post(`/user/notifications/${item.id}/read`);
      setReadIds((s) => new Set([...s, item.id]));
      unread.value = Math.max(0, (unread.value ?? 1) - 1);
    });
  const markAll = () =>
    act(async () => {
      await api.post('/user/notifications/read-all');
      await page.reload();
    });
  // Rows marked read here show so at once; the next page load has it from svc.
  const items = page.items.map((i) =>
    readIds.has(i.id) && i.read_at === null ? { ...i, read_at: new Date().toISOString() } : i,
  );
  const shown = unreadOnly ? items.filter((i) => i.read_at === null) : items;
  const count = unread.value ?? 0;
  return (
    <div class="inbox">
      <div class="inbox-tools">
        <span role="status" class="muted">
          {count === 0 ? 'Nothing unread.' : `${count} unread.`}
        </span>
        <label class="inline">
          <input type="checkbox" checked={unreadOnly} onChange={(e) => setUnreadOnly(e.currentTarget.checked)} /> Unread only
        </label>
        <button type="button" class="secondary small" disabled={count === 0} onClick={() => void markAll()}>
          Mark all read
        </button>
      </div>
      <ErrorNotice error={error ?? page.error} />
      {!page.loaded ? (
        <p class="muted" aria-busy="true">
          Loading…
        </p>
      ) : shown.length === 0 ? (
        !page.error && (
          <Empty title={unreadOnly ? 'Nothing unread' : 'No notifications yet'}>
            <p>
              Your subscriptions decide what lands here.{' '}
              <a href="/account/notifications" onClick={props.onClose}>
                Manage them
              </a>
              .
            </p>
          </Empty>
        )
      ) : (
        <ul class="inbox-list" aria-label="Notifications, newest first">
          {shown.map((item) => (
            <Row key={item.id} item={item} onRead={markRead} onFollow={props.onClose} />
          ))}
        </ul>
      )}
      <div class="actions">
        {page.hasMore && (
          <button type="button" class="secondary" onClick={() => void page.more()} disabled={page.loadingMore}>
            {page.loadingMore ? 'Loading…' : 'Load more'}
          </button>
        )}
        <a href="/account/notifications" onClick={props.onClose}>
          Notification settings
        </a>
        <button type="button" class="secondary" onClick={props.onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
