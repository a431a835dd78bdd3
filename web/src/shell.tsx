// The signed-in frame: a sidebar (a menu on narrow screens) with the project switcher, the current project's
// pages, the service-wide pages and the account, the notification bell (beside the name in the sidebar, in the
// top bar on narrow screens) with its inbox, the Ctrl-K palette (ui/palette.tsx, a chunk fetched when first
// opened), and the page itself in <main>.
import type { ComponentChildren, FunctionComponent } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { LAST_PROJECT } from './pages/project/layout.tsx';
import { PROJECT_SECTIONS, roleAtLeast } from './pages/project/sections.ts';
import { me, projects, signOut } from './session.ts';
import { Bell, InboxHost, inboxOpen, useUnreadCount } from './ui/bell.tsx';
import { PageBoundary } from './ui/boundary.tsx';
import { NavLink } from './ui/link.tsx';

export const SERVICE_PAGES = [
  { href: '/home', label: 'Home', exact: true },
  { href: '/projects', label: 'Projects', exact: true },
  { href: '/activity', label: 'Activity' },
  { href: '/health', label: 'Health' },
];
export const ADMIN_PAGES = [
  { href: '/users', label: 'Users' },
  { href: '/system', label: 'System' },
  { href: '/settings', label: 'Settings' },
];
export const ACCOUNT_PAGES = [
  { href: '/account', label: 'Profile', exact: true },
  { href: '/account/security', label: 'Security' },
  { href: '/account/api-keys', label: 'API keys' },
  { href: '/account/notifications', label: 'Notifications' },
];

/** The project the sidebar shows: the one in the URL, else the last one opened, else the first. */
function currentProject(path: string) {
  const list = projects.value;
  const fromUrl = /^\/projects\/([^/]+)/.exec(path)?.[1];
  const wanted = fromUrl ? decodeURIComponent(fromUrl) : localStorage.getItem(LAST_PROJECT);
  return list.find((p) => p.slug === wanted) ?? (fromUrl ? undefined : list[0]);
}

function ProjectNav(props: { path: string }) {
  const { route } = useLocation();
  const list = projects.value;
  const current = currentProject(props.path);
  if (list.length === 0) return null;
  const base = current ? `/projects/${current.slug}` : '';
  return (
    <div class="nav-group">
      <label class="nav-title" for="project-switcher">
        Current project
      </label>
      <select id="project-switcher" onChange={(e) => route(`/projects/${(e.currentTarget as HTMLSelectElement).value}`)}>
        {!current && <option value="">Choose a project…</option>}
        {list.map((p) => (
          <option key={p.slug} value={p.slug} selected={p.slug === current?.slug}>
            {p.name}
          </option>
        ))}
      </select>
      {current && (
        <ul>
          {PROJECT_SECTIONS.filter((s) => s.label && roleAtLeast(current.role, s.minRole ?? 'viewer')).map((s) => (
            <li key={s.path}>
              <NavLink href={s.path ? `${base}/${s.path}` : base} exact={!s.path}>
                {s.label}
              </NavLink>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

type PaletteComponent = FunctionComponent<{ open: boolean; onClose: () => void }>;

/** Ctrl-K (⌘K on a Mac) anywhere, or the sidebar's button, opens the palette; its code is fetched the first time. */
function PaletteHost() {
  const [open, setOpen] = useState(false);
  const [Palette, setPalette] = useState<PaletteComponent | null>(null);
  const show = () => {
    setOpen(true);
    if (!Palette) void import('./ui/palette.tsx').then((m) => setPalette(() => m.Palette));
  };
  const latest = useRef(show);
  latest.current = show;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === 'k') {
        e.preventDefault();
        latest.current();
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <>
      <button type="button" class="secondary jump" onClick={show} aria-keyshortcuts="Control+K Meta+K">
        Jump to… <kbd>Ctrl K</kbd>
      </button>
      {Palette && <Palette open={open} onClose={() => setOpen(false)} />}
    </>
  );
}

function Links(props: { title: string; links: { href: string; label: string; exact?: boolean }[] }) {
  return (
    <div class="nav-group">
      <p class="nav-title">{props.title}</p>
      <ul>
        {props.links.map((l) => (
          <li key={l.href}>
            <NavLink href={l.href} exact={l.exact}>
              {l.label}
            </NavLink>
          </li>
        ))}
      </ul>
    </div>
  );
}

export function Shell(props: { children: ComponentChildren }) {
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const navigated = useRef(false);
  useUnreadCount();
  useEffect(() => {
    setMenuOpen(false);
    inboxOpen.value = false;
    // After client-side navigation, keyboard and screen-reader users start at the new page, not in the menu.
    if (navigated.current) document.getElementById('main')?.focus();
    navigated.current = true;
  }, [path]);
  const user = me.value!;
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <a href="/" class="brand">
          svc
        </a>
        <div class="topbar-tools">
          <Bell />
          <button
            type="button"
            class="secondary menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="sidebar"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Menu
          </button>
        </div>
      </header>
      <nav id="sidebar" class={menuOpen ? 'sidebar open' : 'sidebar'} aria-label="Main">
        <div class="brand-row wide-only">
          <a href="/" class="brand">
            svc
          </a>
          <Bell />
        </div>
        <PaletteHost />
        <ProjectNav path={path} />
        <Links title="Service" links={SERVICE_PAGES} />
        {user.is_admin && <Links title="Administration" links={ADMIN_PAGES} />}
        <Links title="Account" links={ACCOUNT_PAGES} />
        <div class="nav-user">
          <p>
            Signed in as <strong>{user.display_name}</strong>
            <span class="muted small"> {user.email}</span>
          </p>
          {!user.mfa.enrolled && (
            <p class="small">
              <a href="/account/security">Set up two-factor authentication</a>
            </p>
          )}
          <button type="button" class="secondary" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </nav>
      <main id="main" tabIndex={-1}>
        <PageBoundary resetKey={path}>{props.children}</PageBoundary>
      </main>
      <InboxHost />
    </div>
  );
}
