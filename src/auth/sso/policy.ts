// What the single sign-on settings mean, checked once at start-up (a service whose SSO settings
// contradict each other refuses to start) and read by the password login and the routes. No
// provider code here: an unconfigured svc loads nothing more than this file.
import { ConfigError, type Config } from '../../config/load.ts';
import { addressList, AddressListError } from '../../lib/net.ts';
import { canonicalEmail } from '../../lib/validate.ts';
import type { Role } from '../../projects/service.ts';

type SsoConfig = Pick<
  Config,
  | 'SVC_OIDC_ISSUER'
  | 'SVC_OIDC_CLIENT_ID'
  | 'SVC_OIDC_CLIENT_SECRET'
  | 'SVC_OIDC_ALLOW_HTTP'
  | 'SVC_OIDC_PROJECT_ROLES'
  | 'SVC_AUTH_PROXY_HEADER'
  | 'SVC_AUTH_PROXY_ADDRESSES'
  | 'SVC_PASSWORD_LOGIN_DISABLED'
  | 'SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL'
>;

/** How long a login may take at the provider: the pending login's and its svc_sso cookie's lifetime. */
export const LOGIN_STATE_TTL_SECONDS = 600;

export const oidcConfigured = (c: Pick<Config, 'SVC_OIDC_ISSUER'>): boolean => c.SVC_OIDC_ISSUER !== '';
export const proxyConfigured = (c: Pick<Config, 'SVC_AUTH_PROXY_HEADER'>): boolean => c.SVC_AUTH_PROXY_HEADER !== '';

export interface ProjectRoleRule {
  group: string;
  slug: string;
  role: Role;
}

const ROLE_RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };
export const higherRole = (a: Role | undefined, b: Role): Role => (a && ROLE_RANK[a] >= ROLE_RANK[b] ? a : b);

/** SVC_OIDC_PROJECT_ROLES entries `group:project-slug:role`; the group itself may contain colons. */
export function projectRoleRules(entries: readonly string[]): ProjectRoleRule[] {
  return entries.map((raw) => {
    const parts = raw.trim().split(':');
    const role = parts.pop() as Role;
    const slug = parts.pop() ?? '';
    const group = parts.join(':');
    if (parts.length === 0 || group === '' || !/^[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$/.test(slug) || !(role in ROLE_RANK)) {
      throw new ConfigError(`SVC_OIDC_PROJECT_ROLES: "${raw}" is not group:project-slug:role (role viewer, operator or admin)`, 'SVC_OIDC_PROJECT_ROLES');
    }
    return { group, slug, role };
  });
}

/** Refuses settings that cannot work together (called when the routes are assembled, before listening). */
export function checkSsoSettings(c: SsoConfig): void {
  if (oidcConfigured(c)) {
    let issuer: URL;
    try {
      issuer = new URL(c.SVC_OIDC_ISSUER);
    } catch {
      throw new ConfigError('SVC_OIDC_ISSUER: not a URL', 'SVC_OIDC_ISSUER');
    }
    if (issuer.protocol !== 'https:' && !(c.SVC_OIDC_ALLOW_HTTP && issuer.protocol === 'http:')) {
      throw new ConfigError('SVC_OIDC_ISSUER: must be https:// (or set SVC_OIDC_ALLOW_HTTP=true for a provider without TLS)', 'SVC_OIDC_ISSUER');
    }
    if (c.SVC_OIDC_CLIENT_ID === '' || c.SVC_OIDC_CLIENT_SECRET === '') {
      throw new ConfigError('SVC_OIDC_ISSUER is set without SVC_OIDC_CLIENT_ID and SVC_OIDC_CLIENT_SECRET', 'SVC_OIDC_CLIENT_ID');
    }
  }
  projectRoleRules(c.SVC_OIDC_PROJECT_ROLES);
  if (proxyConfigured(c)) {
    if (c.SVC_AUTH_PROXY_ADDRESSES.length === 0) {
      throw new ConfigError('SVC_AUTH_PROXY_HEADER is set without SVC_AUTH_PROXY_ADDRESSES (the proxies allowed to send it)', 'SVC_AUTH_PROXY_ADDRESSES');
    }
    try {
      addressList(c.SVC_AUTH_PROXY_ADDRESSES);
    } catch (e) {
      if (e instanceof AddressListError) throw new ConfigError(`SVC_AUTH_PROXY_ADDRESSES: ${e.message}`, 'SVC_AUTH_PROXY_ADDRESSES');
      throw e;
    }
  }
  if (c.SVC_PASSWORD_LOGIN_DISABLED) {
    if (!oidcConfigured(c) && !proxyConfigured(c)) {
      throw new ConfigError(
        'SVC_PASSWORD_LOGIN_DISABLED needs single sign-on: configure SVC_OIDC_ISSUER (with client id and secret) or SVC_AUTH_PROXY_HEADER first',
        'SVC_PASSWORD_LOGIN_DISABLED',
      );
    }
    if (!canonicalEmail(c.SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL)) {
      throw new ConfigError(
        'SVC_PASSWORD_LOGIN_DISABLED needs SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL: the administrator who can still sign in with a password when the provider is down',
        'SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL',
      );
    }
  }
}

/** Whether `email` may sign in with a password under the current settings. */
export function passwordLoginAllowed(c: Pick<Config, 'SVC_PASSWORD_LOGIN_DISABLED' | 'SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL'>, email: string): boolean {
  if (!c.SVC_PASSWORD_LOGIN_DISABLED) return true;
  const breakGlass = canonicalEmail(c.SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL);
  return breakGlass !== null && canonicalEmail(email) === breakGlass;
}
