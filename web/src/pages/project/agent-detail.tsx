// /projects/:slug/agents/:agent_id: one agent, what it advertised in its last hello, and its health samples
// (agent_status frames) over time with the telemetry loss each reported.
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import type { Agent, HealthSample } from '../../api/types.ts';
import { concerns, useLive } from '../../lib/live.ts';
import { useResource } from '../../lib/use-resource.ts';
import { BackLink, Empty, Facts, Loaded, RefreshButton, Section, Time } from '../../ui/bits.tsx';
import { LossChart, lossParts, lossTotal } from '../../ui/loss-chart.tsx';
import { AgentState } from '../../ui/status.tsx';
import { ListTable } from '../../ui/table.tsx';
import { Engines, Protocol, RevokeAgent } from './agents.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath } from './requests.ts';

function Loss(props: { loss: Record<string, unknown> | null }) {
  if (!props.loss) return <span class="muted">not reported</span>;
  const parts = lossParts(props.loss);
  if (parts.length === 0) return <span>none</span>;
  return <span class="text-bad">{parts.map(([k, n]) => `${k.replace(/_/g, ' ')} ${n}`).join(', ')}</span>;
}

function Capabilities(props: { of: Record<string, string[]> }) {
  const engines = Object.entries(props.of);
  if (engines.length === 0) return <>-</>;
  return (
    <>
      {engines.map(([engine, caps]) => (
        <div key={engine}>
          <strong>{engine}</strong>: <span class="small">{caps.join(', ')}</span>
        </div>
      ))}
    </>
  );
}

function Health(props: { path: string }) {
  const samples = useResource(() => api.get<HealthSample[]>(`${props.path}/health`), [props.path]);
  return (
    <Section
      title="Health samples"
      actions={<RefreshButton onRefresh={samples.reload} busy={samples.loading} />}
    >
      <p class="muted small">
        Agents send a status sample about once a minute; the newest 100 are kept here. Telemetry loss counts what the agent could
        not deliver (buffer full, rejected content), as it reported it.
      </p>
      <Loaded resource={samples}>{(list) => <LossChart samples={list} />}</Loaded>
      <ListTable
        resource={samples}
        columns={['Captured', 'Worker', 'Frames lost', 'Telemetry loss']}
        empty={
          <Empty title="No health samples yet">
            <p>They arrive with the agent's status frames (z4j sends them unless Z4J_AGENT_STATUS_DISABLED=1).</p>
          </Empty>
        }
        row={(s) => (
          <tr key={s.id}>
            <td>
              <Time iso={s.captured_at} />
            </td>
            <td>
              <code>{s.worker_id}</code>
            </td>
            <td>{s.telemetry_loss ? lossTotal(s.telemetry_loss) : '-'}</td>
            <td>
              <Loss loss={s.telemetry_loss} />
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

export function AgentDetail({ project, params }: ProjectPageProps) {
  const { route } = useLocation();
  const list = `/projects/${project.slug}/agents`;
  const path = `${projectPath(project.slug)}/agents/${encodeURIComponent(params.agent_id ?? '')}`;
  const agent = useResource(() => api.get<Agent>(path), [path]);
  useLive(project.slug, ['agent'], (e) => concerns(e, params.agent_id) && agent.reload());
  return (
    <div class="stack">
      <BackLink href={list}>All agents</BackLink>
      <Loaded resource={agent}>
        {(a) => (
          <Section
            title={`Agent ${a.name}`}
            actions={project.role === 'admin' && <RevokeAgent project={project} agent={a} onRevoked={() => route(list)} />}
          >
            <Facts
              items={[
                ['State', <AgentState state={a.state} />],
                ['Last seen', <Time iso={a.last_seen_at} />],
                ['Last connected', <Time iso={a.last_connect_at} />],
                ['Protocol', <Protocol agent={a} />],
                ['Framework', a.framework_adapter || '-'],
                ['Engines', <Engines agent={a} />],
                ['Schedulers', a.scheduler_adapters.join(', ') || '-'],
                ['Capabilities', <Capabilities of={a.capabilities} />],
                ['Agent id', <code>{a.id}</code>],
                ['Created', <Time iso={a.created_at} />],
              ]}
            />
          </Section>
        )}
      </Loaded>
      {agent.data && <Health path={path} />}
    </div>
  );
}
