// The project's live agents, shared by the pages that name agents (commands, task events) or pick one.
import { api } from '../../api/client.ts';
import type { Agent } from '../../api/types.ts';
import { useResource, type Resource } from '../../lib/use-resource.ts';
import { agentsGet } from './requests.ts';

export function useAgents(slug: string): Resource<Agent[]> & { nameOf: (id: string | null) => string } {
  const agents = useResource(() => api.get<Agent[]>(...agentsGet(slug)), [slug]);
  const nameOf = (id: string | null): string => {
    if (!id) return '-';
    const short = `agent ${id.slice(0, 8)}`;
    if (!agents.data) return short;
    // Revoked agents are no longer listed; their short id still tells them apart.
    return agents.data.find((a) => a.id === id)?.name ?? `${short} (revoked)`;
  };
  return { ...agents, nameOf };
}
