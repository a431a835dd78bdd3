// API keys: for scripts and integrations, limited to the routes whose rule
// names a scope (auth/scopes.ts). The secret is shown once; only its keyed
// hash is stored. Optional expiry and binding to one project.
import type { ApiKeyPublic } from './schemas.ts';
import type { Executor } from '../db/connect.ts';
import { notFound, validationFailed } from '../http/errors.ts';
import { isoMicros, nowIso, nowMicros } from '../lib/clock.ts';
import type { AppContext } from '../server/context.ts';
import type { Actor } from './actor.ts';
import { API_KEY_PREFIX, type Principal } from './principal.ts';
import { ADMIN_ONLY_SCOPES, SCOPES, type Scope } from './scopes.ts';
import { apiKeysOf, insertApiKey, updateApiKey, type ApiKeyRow } from './store.ts';
import { mastersOf, mintToken, tokenHash } from './tokens.ts';

export type { ApiKeyPublic };

export const toApiKeyPublic = (k: ApiKeyRow): ApiKeyPublic => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  project_id: k.project_id,
  created_at: k.created_at,
  expires_at: k.expires_at,
  last_used_at: k.last_used_at,
  last_used_ip: k.last_used_ip,
  revoked_at: k.revoked_at,
});

export interface NewApiKeyInput {
  name: string;
  scopes: string[];
  project_id?: string;
  expires_in_days?: number;
}

export async function createApiKey(
  ctx: AppContext,
  who: Principal,
  input: NewApiKeyInput,
  actor: Actor,
  canUseProject: (ex: Executor, projectId: string) => Promise<boolean>,
): Promise<ApiKeyPublic & { token: string }> {
  const unknown = input.scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0) throw validationFailed([{ path: '/scopes', message: `unknown scopes: ${unknown.join(', ')}` }]);
  if (!who.user.is_admin && input.scopes.some((s) => ADMIN_ONLY_SCOPES.includes(s as Scope))) {
    throw validationFailed([{ path: '/scopes', message: `only administrators may grant ${ADMIN_ONLY_SCOPES.join(', ')}` }]);
  }
  const token = `${API_KEY_PREFIX}${mintToken()}`;
  const now = nowMicros();
  const row: ApiKeyRow = {
    id: crypto.randomUUID(),
    user_id: who.user.id,
    name: input.name.trim(),
    token_hash: tokenHash(mastersOf(ctx.config), 'api-key', token),
    prefix: token.slice(0, 12),
    scopes: [...new Set(input.scopes)],
    project_id: input.project_id ?? null,
    created_at: isoMicros(now),
    expires_at: input.expires_in_days ? isoMicros(now + input.expires_in_days * 86_400_000_000) : null,
    last_used_at: null,
    last_used_ip: null,
    revoked_at: null,
  };
  await ctx.db.tx(async (tx) => {
    if (row.project_id && !(await canUseProject(tx, row.project_id))) throw notFound('project');
    await insertApiKey(tx, row);
    await ctx.audit.append(tx, {
      ...actor,
      action: 'api_key.created',
      target_type: 'api_key',
      target_id: row.id,
      project_id: row.project_id,
      metadata: { name: row.name, scopes: row.scopes, expires_at: row.expires_at },
    });
  });
  return { ...toApiKeyPublic(row), token };
}

export const listApiKeys = async (ctx: AppContext, userId: string): Promise<ApiKeyPublic[]> => (await apiKeysOf(ctx.db, userId)).map(toApiKeyPublic);

export async function revokeApiKey(ctx: AppContext, userId: string, keyId: string, actor: Actor): Promise<void> {
  await ctx.db.tx(async (tx) => {
    const key = (await apiKeysOf(tx, userId)).find((k) => k.id === keyId);
    if (!key) throw notFound('API key');
    if (!key.revoked_at) await updateApiKey(tx, key.id, { revoked_at: nowIso() });
    await ctx.audit.append(tx, { ...actor, action: 'api_key.revoked', target_type: 'api_key', target_id: key.id, project_id: key.project_id });
  });
}
