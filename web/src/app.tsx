// Routing: the sign-in and invitation pages stand alone; everything else needs a session and sits in the shell.
// Project pages are routed by PROJECT_SECTIONS (pages/project/sections.ts).
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { useLayoutEffect } from 'preact/hooks';
import { ActivityPage } from './pages/activity.tsx';
import { ApiKeysPage } from './pages/account/api-keys.tsx';
import { ProfilePage } from './pages/account/profile.tsx';
import { SecurityPage } from './pages/account/security.tsx';
import { HealthPage } from './pages/health.tsx';
import { InvitePage } from './pages/invite.tsx';
import { AuthCard, LoginMfaPage, LoginPage } from './pages/login.tsx';
import { NotFoundPage } from './pages/not-found.tsx';
import { ProjectLayout } from './pages/project/layout.tsx';
import { ProjectsPage } from './pages/projects.tsx';
import { UsersPage } from './pages/users.tsx';
import { bootError, me, projects, setNavigate } from './session.ts';
import { Shell } from './shell.tsx';
import { PageBoundary } from './ui/boundary.tsx';
import { ErrorNotice } from './ui/errors.tsx';
import { Redirect } from './ui/link.tsx';
import { ReverifyDialog } from './ui/reverify.tsx';

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
        <Route path="/projects" component={ProjectsPage} />
        <Route path="/projects/:slug/:rest*" component={ProjectLayout} />
        <Route path="/activity" component={ActivityPage} />
        <Route path="/health" component={HealthPage} />
        <Route path="/users" component={UsersPage} />
        <Route path="/account" component={ProfilePage} />
        <Route path="/account/security" component={SecurityPage} />
        <Route path="/account/api-keys" component={ApiKeysPage} />
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
