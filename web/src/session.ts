// Who is signed in, as the whole app sees it, and the moves between signed in and out. `me` is undefined while
// the first answer is awaited, null when nobody is signed in (or the login still waits for its MFA step).
import { signal } from '@preact/signals';
import { ApiError, api, setRecovery } from './api/client.ts';
import { earlyAnswersIn } from './api/early.ts';
import type { Me, Project, SetupStatus } from './api/types.ts';
import { askForMfaCode } from './ui/reverify.tsx';

export const me = signal<Me | null | undefined>(undefined);
/** A failure to reach svc at all while booting: shown instead of a blank page. */
export const bootError = signal<ApiError | null>(null);
/** Said once on the login page: why the visitor landed there. */
export const loginNotice = signal<string | null>(null);
/** The projects the user can open (sidebar switcher, pickers); reloaded after changes. */
export const projects = signal<Project[]>([]);

/** Client-side navigation from outside components; the router registers its `route` here. */
let navigate: (url: string, replace?: boolean) => void = (url) => location.assign(url);
export const setNavigate = (fn: typeof navigate): void => {
  navigate = fn;
};
export const go = (url: string, replace = false): void => navigate(url, replace);

/** Only same-app paths are followed after login (never another origin, never back to the login pages). */
export function safeNext(next: string | undefined | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/login')) return '/';
  return next;
}

const here = () => location.pathname + location.search;

export async function loadProjects(): Promise<void> {
  projects.value = await api.get<Project[]>('/projects');
}

/** Reads the session; on first boot sends the visitor to the server-rendered setup page. */
export async function loadSession(): Promise<void> {
  try {
    // Both at once (the projects are useless, and refused, while the login waits for its MFA step).
    const [who, list] = await Promise.all([
      api.get<Me>('/auth/me', undefined, { anonymous: true }),
      api.get<Project[]>('/projects', undefined, { anonymous: true }).catch(() => null),
      // And the opened page's early answers (api/early.ts): it then renders with its rows, in one frame.
      earlyAnswersIn(),
    ]);
    // Projects first: the pages (and `/`, which opens the only project) render as soon as `me` is set.
    if (!who.mfa.pending) {
      if (list) projects.value = list;
      else await loadProjects();
    } else if (!location.pathname.startsWith('/login')) go(`/login/mfa?next=${encodeURIComponent(here())}`, true);
    me.value = who.mfa.pending ? null : who;
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) {
      bootError.value = e instanceof ApiError ? e : new ApiError(0, 'client_error', String(e));
      return;
    }
    const status = await api.get<SetupStatus>('/setup/status', undefined, { anonymous: true }).catch(() => null);
    if (status?.first_boot) {
      location.replace('/setup');
      return;
    }
    me.value = null;
  }
}

export async function refreshMe(): Promise<void> {
  me.value = await api.get<Me>('/auth/me');
}

export async function signOut(): Promise<void> {
  try {
    await api.post('/auth/logout', undefined, { anonymous: true });
  } finally {
    me.value = null;
    projects.value = [];
    loginNotice.value = 'You are signed out.';
    go('/login', true);
  }
}

/** The server said the session is gone (revoked, expired, password changed elsewhere) or waits for MFA. */
function signedOut(code: string): void {
  if (location.pathname.startsWith('/login')) return;
  const next = encodeURIComponent(here());
  if (code === 'mfa_required') {
    go(`/login/mfa?next=${next}`, true);
    return;
  }
  const wasSignedIn = me.value !== null && me.value !== undefined;
  me.value = null;
  projects.value = [];
  if (wasSignedIn) loginNotice.value = 'Your session has ended. Sign in again to continue.';
  go(`/login?next=${next}`, true);
}

setRecovery({ signedOut, reverify: askForMfaCode });

// A tab left open while the session was revoked elsewhere finds out as soon as it is looked at again.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && me.value) void api.get<Me>('/auth/me').catch(() => {});
});
