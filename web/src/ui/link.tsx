// Links that know where the user is, and a redirect that happens after render (never during it).
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso';

export function NavLink(props: { href: string; children: ComponentChildren; exact?: boolean }) {
  const { path } = useLocation();
  const active = props.exact ? path === props.href : path === props.href || path.startsWith(`${props.href}/`);
  return (
    <a href={props.href} aria-current={active ? 'page' : undefined}>
      {props.children}
    </a>
  );
}

export function Redirect(props: { to: string }) {
  const { route } = useLocation();
  useEffect(() => route(props.to, true), [props.to]);
  return null;
}
