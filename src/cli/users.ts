// `svc bootstrap-admin` (alias `createsuperuser`), `svc changepassword`,
// `svc reset-mfa`, `svc reset-setup`: account recovery from the host, for an
// operator with access to the installation. Rows they write are attributed
// to the operating-system user.
import { readFileSync } from 'node:fs';
import { cliActor } from '../auth/actor.ts';
import { resetMfaByAdmin } from '../auth/mfa.ts';
import { loadConfigMintingSecrets } from '../config/secrets.ts';
import { upgrade } from '../db/migrate.ts';
import { ApiError } from '../http/errors.ts';
import { createContext, openConfiguredDatabase } from '../server/compose.ts';
import type { AppContext } from '../server/context.ts';
import { bootstrapAdmin, resetSetupTokens } from '../setup/service.ts';
import { assertEmail, findUserByEmail, setPassword } from '../users/service.ts';
import { CliError, err, out, USAGE } from './kit.ts';

/** An installation context for a CLI command: migrated database, minted secrets. */
async function withInstallation<T>(fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const { loaded } = loadConfigMintingSecrets();
  const db = openConfiguredDatabase(loaded);
  try {
    await upgrade(db);
    const ctx = createContext(loaded, db);
    return await fn(ctx);
  } catch (e) {
    if (e instanceof ApiError) {
      const fields = (e.details.fields as { message: string }[] | undefined)?.map((f) => f.message).join('; ');
      throw new CliError(fields || e.message, e.status === 422 ? USAGE : 1);
    }
    throw e;
  } finally {
    await db.close().catch(() => {});
  }
}

/** The first line of standard input (where --password-stdin reads from). */
function passwordFromStdin(): string {
  const text = readFileSync(0, 'utf8');
  const line = text.split(/\r?\n/)[0] ?? '';
  if (line === '') throw new CliError('no password on standard input', USAGE);
  return line;
}

export function bootstrapAdminCommand(opts: { email?: string; displayName?: string; passwordStdin?: boolean }): Promise<number> {
  if (!opts.email) throw new CliError('--email is required', USAGE);
  if (!opts.passwordStdin) throw new CliError('--password-stdin is required: pipe the password in (it never goes on the command line)', USAGE);
  const password = passwordFromStdin();
  return withInstallation(async (ctx) => {
    const user = await bootstrapAdmin(ctx, { email: opts.email!, password, display_name: opts.displayName }, cliActor());
    out(`created administrator ${user.email} and the default project`);
    return 0;
  });
}

async function userOf(ctx: AppContext, email: string) {
  const user = await findUserByEmail(ctx.db, assertEmail(email));
  if (!user) throw new CliError(`no user with e-mail address ${email}`);
  return user;
}

export function changePasswordCommand(email: string, opts: { passwordStdin?: boolean }): Promise<number> {
  if (!opts.passwordStdin) throw new CliError('--password-stdin is required: pipe the new password in', USAGE);
  const password = passwordFromStdin();
  return withInstallation(async (ctx) => {
    const user = await userOf(ctx, email);
    await setPassword(ctx, user.id, password, cliActor(), 'user.password.reset', '/password');
    out(`password of ${user.email} changed; their sessions and remembered devices ended`);
    return 0;
  });
}

export function resetMfaCommand(email: string): Promise<number> {
  return withInstallation(async (ctx) => {
    const user = await userOf(ctx, email);
    const cleared = await resetMfaByAdmin(ctx, user.id, cliActor());
    out(`two-factor authentication of ${user.email} reset (${cleared.codes} recovery codes and ${cleared.devices} remembered devices removed); they can sign in with their password and enrol again`);
    return 0;
  });
}

export function resetSetupCommand(opts: { force?: boolean }): Promise<number> {
  if (!opts.force) {
    err('svc reset-setup deletes pending first-boot tokens; rerun with --force to do it (nothing was changed)');
    return Promise.resolve(1);
  }
  return withInstallation(async (ctx) => {
    const n = await resetSetupTokens(ctx, cliActor());
    out(`deleted ${n} pending setup token${n === 1 ? '' : 's'}; restart svc serve for a new setup link`);
    return 0;
  });
}

