// /api/v1/admin: resolved settings and system versions. Global
// administrators with a browser session only: API keys never reach these.
import { Elysia } from 'elysia';
import { authorize } from '../auth/guards.ts';
import { settingsView } from '../config/mask.ts';
import type { AppContext } from '../server/context.ts';
import { checkForUpdates, installedVersions } from './versions.ts';

export const adminRoutes = (ctx: AppContext) =>
  new Elysia({ prefix: '/api/v1/admin', detail: { tags: ['admin'] } })
    .get(
      '/settings',
      async ({ request }) => {
        await authorize(ctx, request, { admin: true });
        // Secrets are masked; plain URL settings (the database URL among them) are shown as configured.
        return { home: ctx.paths.home, settings: settingsView(ctx.config, ctx.sources) };
      },
      { detail: { summary: 'Resolved settings with their sources; secret values masked' } },
    )
    .get('/system/versions', async ({ request }) => {
      await authorize(ctx, request, { admin: true });
      return installedVersions();
    })
    .post('/system/versions/check', async ({ request }) => {
      await authorize(ctx, request, { admin: true });
      return checkForUpdates(ctx.config.SVC_VERSION_CHECK_URL, ctx.config.SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP);
    });
