// /api/v1/admin: resolved settings and system versions. Global
// administrators with a browser session only: API keys never reach these.
import { Elysia } from 'elysia';
import { guarded } from '../access/guard.ts';
import { settingsView } from '../config/mask.ts';
import type { AppContext } from '../server/context.ts';
import { Settings } from './schemas.ts';
import { checkForUpdates, installedVersions, UpdateCheck, Versions } from './versions.ts';

const ADMIN = { user: { admin: true } } as const;
export const adminRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/admin', detail: { tags: ['admin'] } })
    // Secrets are masked; plain URL settings (the database URL among them) are shown as configured.
    .get('/settings', () => ({ home: ctx.paths.home, settings: settingsView(ctx.config, ctx.sources) }), {
      ...guarded(ctx, { summary: 'Resolved settings with their sources; secret values masked', access: ADMIN, ok: Settings }),
    })
    .get('/system/versions', () => installedVersions(), {
      ...guarded(ctx, { summary: 'Installed versions of svc, its packages and the agent protocol', access: ADMIN, ok: Versions }),
    })
    .post('/system/versions/check', () => checkForUpdates(ctx.config.SVC_VERSION_CHECK_URL, ctx.config.SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP), {
      ...guarded(ctx, {
        summary: 'Compare the installed packages with the release manifest (cached for an hour; installs nothing)',
        access: ADMIN,
        ok: UpdateCheck,
        errors: { 404: ['check_disabled'], 502: ['check_failed'] },
      }),
    });
