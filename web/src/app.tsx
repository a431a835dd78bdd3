// Routing: the sign-in and invitation pages stand alone; everything else needs a session and sits in the shell.
// Project pages are routed by PROJECT_SECTIONS (pages/project/sections.ts).
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useLayoutEffect } from 'preact/hooks';
import { AuthCard, LoginMfaPage, LoginPage } from './pages/login.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { ProjectLayout } from './pages/project/layout.tsx';
import { ProjectsPage } from './pages/projects.tsx';
import { bootError, me, projects, setNavigate } from './session.ts';
import { Shell } from './shell.tsx';
import { PageBoundary } from './ui/boundary.tsx';
import { ErrorNotice } from './ui/errors.tsx';
import { lazyPage } from './ui/lazy-page.ts';
import { Redirect } from './ui/link.tsx';
import { ReverifyDialog } from './ui/reverify.tsx';

// Fetched when first shown (ui/lazy-page.ts): the account pages, administration, the audit trail, health and
// accepting an invitation are visited now and then, the project pages and the sign-in all the time.
const ActivityPage = lazyPage(() => import('./pages/activity.tsx').then((m) => m.ActivityPage));
const AccountNotificationsPage = lazyPage(() =>
  import('./pages/account/notifications.tsx').then((m) => m.AccountNotificationsPage),
);
const ApiKeysPage = lazyPage(() => import('./pages/account/api-keys.tsx').then((m) => m.ApiKeysPage));
const ProfilePage = lazyPage(() => import('./pages/account/profile.tsx').then((m) => m.ProfilePage));
const SecurityPage = lazyPage(() => import('./pages/account/security.tsx').then((m) => m.SecurityPage));
const HealthPage = lazyPage(() => import('./pages/health.tsx').then((m) => m.HealthPage));
const InvitePage = lazyPage(() => import('./pages/invite.tsx').then((m) => m.InvitePage));
const UsersPage = lazyPage(() => import('./pages/users.tsx').then((m) => m.UsersPage));
const SystemPage = lazyPage(() => import('./pages/system.tsx').then((m) => m.SystemPage));
const SettingsPage = lazyPage(() => import('./pages/settings.tsx').then((m) => m.SettingsPage));
const HomePage = lazyPage(() => import('./pages/home.tsx').then((m) => m.HomePage));

const PUBLIC_PATHS = ['/login', '/login/mfa', '/invite'];

/** `/`: straight into the only project, else the list. */
function Home() {
  const list = projects.value;
  return <Redirect to={list.length === 1 ? `/projects/${list[0]!.slug}` : '/projects'} />;
}

function NavBridge() {
  const { route } = useLocation();
  // At commit, not after the first paint: with index.html's early answers the session can be known before then,
  // and a redirect from loadSession must move inside the app rather than reload the page.
  useLayoutEffect(() => setNavigate(route), [route]);
  return null;
}

function Pages() {
  const { path, url } = useLocation();
  if (bootError.value) {
    return (
      <AuthCard title="svc cannot be reached">
        <ErrorNotice error={bootError.value} />
        <button type="button" class="primary" onClick={() => location.reload()}>
          Try again
        </button>
      </AuthCard>
    );
  }
  if (me.value === undefined) return <p class="splash">Loading svc…</p>;
  if (PUBLIC_PATHS.includes(path)) {
    return (
      <PageBoundary resetKey={path}>
        <Router>
          <Route path="/login" component={LoginPage} />
          <Route path="/login/mfa" component={LoginMfaPage} />
          <Route path="/invite" component={InvitePage} />
        </Router>
      </PageBoundary>
    );
  }
  if (me.value === null) return <Redirect to={`/login?next=${encodeURIComponent(url)}`} />;
  return (
    <Shell>
      <Router>
        <Route path="/" component={Home} />
        <Route path="/home" component={HomePage} />
        <Route path="/projects" component={ProjectsPage} />
        <Route path="/projects/:slug/:rest*" component={ProjectLayout} />
        <Route path="/activity" component={ActivityPage} />
        <Route path="/health" component={HealthPage} />
        <Route path="/users" component={UsersPage} />
        <Route path="/system" component={SystemPage} />
        <Route path="/settings" component={SettingsPage} />
        <Route path="/account" component={ProfilePage} />
        <Route path="/account/security" component={SecurityPage} />
        <Route path="/account/api-keys" component={ApiKeysPage} />
        <Route path="/account/notifications" component={AccountNotificationsPage} />
        <Route default component={NotFoundPage} />
      </Router>
    </Shell>
  );
}

export function App() {
  return (
    <LocationProvider>
      <NavBridge />
      <Pages />
      <ReverifyDialog />
    </LocationProvider>
  );
}
