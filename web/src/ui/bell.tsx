// The bell in the shell: the number of unread inbox rows (GET /user/notifications/unread-count, asked for at once
// — index.html's inline script has it on its way — then every 30 s while the tab is visible, and again after
// anything that reads or adds rows), and the inbox it opens. The inbox is a chunk of its own
// (pages/notifications/inbox.tsx), fetched when first opened: the bell itself is all every page load carries.
import { signal } from '@preact/signals';
import type { FunctionComponent } from 'preact';
import { useLayoutEffect, useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { UnreadCount } from '../api/types.ts';
import { UNREAD_COUNT_PATH } from '../api/url.ts';
import { usePoll } from '../lib/use-poll.ts';
import { Dialog } from './dialog.tsx';

const POLL_MS = 30_000;

/** Unread inbox rows; null until first known (or when it cannot be read). */
export const unread = signal<number | null>(null);
/** Whether the inbox is open. */
export const inboxOpen = signal(false);

/** Asks for the unread count again (after marking rows read, or anything that may have added rows). */
export async function refreshUnread(): Promise<void> {
  try {
    unread.value = (await api.get<UnreadCount>(UNREAD_COUNT_PATH)).unread;
  } catch {
    // The badge keeps its last number; the next poll tries again.
  }
}

/** Keeps `unread` current while the shell is shown: once at commit (taking the early answer), then polled. */
export function useUnreadCount(): void {
  useLayoutEffect(() => {
    void refreshUnread();
    // A tab looked at again shows the count as it is now, not as it was at the last poll.
    const onVisible = () => document.visibilityState === 'visible' && void refreshUnread();
    document.addEventListener('visibilitychange', onVisible);
    return () => document.removeEventListener('visibilitychange', onVisible);
  }, []);
  usePoll(refreshUnread, POLL_MS);
}

const badgeText = (n: number) => (n > 99 ? '99+' : String(n));

/** The bell button with its badge; the shell shows one in the sidebar (wide screens) and one in the top bar. */
export function Bell() {
  const n = unread.value ?? 0;
  const label = n > 0 ? `Notifications, ${n} unread` : 'Notifications';
  return (
    <button
      type="button"
      class="bell"
      aria-label={label}
      aria-haspopup="dialog"
      title={label}
      onClick={() => (inboxOpen.value = true)}
    >
      <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
        <path
          d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1Z"
          fill="currentColor"
        />
      </svg>
      {n > 0 && (
        <span class="bell-count" data-testid="unread-badge">
          {badgeText(n)}
        </span>
      )}
    </button>
  );
}

type InboxComponent = FunctionComponent<{ onClose: () => void }>;
let inboxComponent: InboxComponent | null = null;

/** The inbox dialog; what it lists is fetched with its code when first opened. */
export function InboxHost() {
  const open = inboxOpen.value;
  const [, setLoaded] = useState(0);
  const [failed, setFailed] = useState(false);
  const close = () => (inboxOpen.value = false);
  useLayoutEffect(() => {
    if (!open || inboxComponent) return;
    setFailed(false);
    import('../pages/notifications/inbox.tsx').then(
      (m) => {
        inboxComponent = m.InboxContent;
        setLoaded((x) => x + 1);
      },
      () => setFailed(true),
    );
  }, [open]);
  const Content = inboxComponent;
  return (
    <Dialog open={open} title="Notifications" onClose={close} wide>
      {Content ? (
        <Content onClose={close} />
      ) : failed ? (
        <p class="notice error" role="alert">
          The inbox could not be fetched from svc (it may have been upgraded since this tab was opened). Reload the page.
        </p>
      ) : (
        <p class="muted" aria-busy="true">
          Loading…
        </p>
      )}
    </Dialog>
  );
}
