// Enforces a route's contract before its handler runs: the caller must meet
// the access rule (auth/guards.ts: credential, MFA step, CSRF, scope, admin,
// fresh MFA) and, for project routes, hold the role in the path's project.
// The handler reads what was granted with grantOf(request).
import { authorize } from '../auth/guards.ts';
import type { Principal } from '../auth/principal.ts';
import { contract, type Contract, type ContractOptions, type Role } from '../http/contract.ts';
import { bearsMetricsToken } from '../metrics/token.ts';
import { projectAccess, type ProjectAccess } from '../projects/service.ts';
import type { AppContext } from '../server/context.ts';

export interface Grant {
  who: Principal;
  /** The path's project and the caller's role in it (project routes). */
  project: ProjectAccess['project'];
  role: Role;
}

type Guard = (context: { request: Request; params: Record<string, string>; body: unknown }) => Promise<void>;

const grants = new WeakMap<Request, Grant | { who: Principal }>();

/** What the guard granted this request (a project route's project included). */
export function grantOf(request: Request): Grant {
  const g = grants.get(request);
  if (!g || !('project' in g)) throw new Error('grantOf: the route has no project guard');
  return g;
}

/** The caller the guard admitted. */
export function callerOf(request: Request): Principal {
  const g = grants.get(request);
  if (!g) throw new Error('callerOf: the route has no guard');
  return g.who;
}

/** Route options for a contract, with its access rule enforced ahead of the handler. `roleFor`
 * raises a project route's role by what the body asks (an action only admins may take). */
export function guarded<C extends Contract>(ctx: AppContext, c: C, roleFor?: (body: any) => Role): ContractOptions<C> & { beforeHandle?: Guard } {
  const options = contract(c);
  const access = c.access;
  if (!('user' in access)) return options;
  return {
    ...options,
    beforeHandle: async ({ request, params, body }) => {
      // The metrics token admits where the contract says so; such a caller has no principal.
      if (access.metricsToken && bearsMetricsToken(ctx.config, request)) return;
      const who = await authorize(ctx, request, access.user);
      if (!access.project) {
        grants.set(request, { who });
        return;
      }
      const need = roleFor?.(body) ?? access.project;
      const { project, role } = await projectAccess(ctx.db, who, params.slug!, need);
      grants.set(request, { who, project, role });
    },
  };
}
