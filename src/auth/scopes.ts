// API-key scopes: `<resource>:<read|write>`; `write` implies `read`;
// `admin:*` admits everything a key may reach. Keys never reach /auth,
// user mutations, agent mint/revoke, activity, /admin/settings or /admin/system.
export const SCOPES = [
  'projects:read',
  'agents:read',
  'tasks:read',
  'commands:read',
  'commands:write',
  'health:read',
  'notifications:read',
  'notifications:write',
  'schedules:read',
  'schedules:write',
  'users:read',
  'admin:*',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Scopes only global administrators may put on a key. */
export const ADMIN_ONLY_SCOPES: readonly Scope[] = ['users:read', 'admin:*'];

export function scopeAllows(granted: readonly string[], needed: string): boolean {
  if (granted.includes('admin:*') || granted.includes(needed)) return true;
  const [resource, action] = needed.split(':');
  return action === 'read' && granted.includes(`${resource}:write`);
}
