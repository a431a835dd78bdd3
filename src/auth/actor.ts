// Who did it, for audit rows: the caller's user and key, address and agent.
import type { AuditEntry } from '../audit/chain.ts';
import { requestIpOf } from '../http/request.ts';
import type { AppContext } from '../server/context.ts';
import type { Principal } from './principal.ts';

export type Actor = Pick<AuditEntry, 'user_id' | 'api_key_id' | 'source_ip' | 'user_agent'>;

export function actorOf(ctx: AppContext, request: Request, who: Principal | null): Actor {
  return {
    user_id: who?.user.id ?? null,
    api_key_id: who?.apiKey?.id ?? null,
    source_ip: requestIpOf(ctx, request),
    user_agent: request.headers.get('user-agent'),
  };
}

/** The operating-system user running a CLI command (for rows the CLI writes). */
export function cliActor(): Actor {
  const os = process.env.SUDO_USER || process.env.USER || process.env.LOGNAME || `uid:${process.getuid?.() ?? '?'}`;
  return { user_id: null, api_key_id: null, source_ip: null, user_agent: `svc-cli (os user ${os})` };
}
