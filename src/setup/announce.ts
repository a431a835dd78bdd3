// At start, while no user exists (serve.ts has already tried the bootstrap
// admin from settings): print the one-shot setup link on stderr, and a fresh
// one whenever the previous link runs out before anyone used it.
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { every } from '../server/schedule.ts';
import { hasLiveSetupToken, mintSetupToken, setupOpen } from './service.ts';

const log = logger('setup');

async function printLink(ctx: AppContext, baseUrl: string): Promise<void> {
  const minted = await mintSetupToken(ctx);
  if (!minted) return;
  const minutes = Math.round(ctx.config.SVC_FIRST_BOOT_TOKEN_TTL_SECONDS / 60);
  process.stderr.write(
    `\nNo administrator exists yet. Open this link within ${minutes} minutes to create one:\n\n  ${baseUrl}/setup?token=${minted.token}\n\n`,
  );
  // The token itself stays out of the log.
  log.info({ expires_at: minted.expiresAt }, 'first-boot setup link printed on stderr');
}

export async function announceSetup(ctx: AppContext, baseUrl: string): Promise<void> {
  if (!(await setupOpen(ctx.db))) return;
  await printLink(ctx, baseUrl);
  every(ctx, 'setup-link', 15_000, async () => {
    if ((await setupOpen(ctx.db)) && !(await hasLiveSetupToken(ctx.db))) await printLink(ctx, baseUrl);
  });
}
