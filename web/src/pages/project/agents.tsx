// /projects/:slug/agents: the project's agents with their state, last contact, protocol and engines; minting
// (the secrets and configuration shown once) and revoking for project admins. The list refreshes itself while
// a freshly minted agent has not connected yet, so the admin sees it arrive.
import { useSignal, type Signal } from '@preact/signals';
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Agent, MintedAgent, Project } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { useLive } from '../../lib/live.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { Badge, ConfirmButton, ConfirmDialog, Empty, Loaded, RefreshButton, Section, Time } from '../../ui/bits.tsx';
import { AgentState } from '../../ui/status.tsx';
import { Table } from '../../ui/table.tsx';
import { ConnectAgentButton, MintedAgentPanel } from './agent-connect.tsx';
import type { ProjectPageProps } from './sections.ts';
import { projectPath } from './requests.ts';
import { useAgents } from './use-agents.ts';

const WATCH_MS = 3000;

export function Protocol(props: { agent: Agent }) {
  const a = props.agent;
  return (
    <>
      {a.protocol_version || <span class="muted" title="Reported in the WebSocket hello; long-poll agents send none">-</span>}
      {a.is_outdated && (
        <>
          {' '}
          {Badge({ tone: 'warn', children: 'outdated' })}
        </>
      )}
    </>
  );
}

export function Engines(props: { agent: Agent }) {
  const engines = props.agent.engine_adapters;
  if (engines.length === 0) return <span class="muted" title="None reported (long-poll agents never report engines)">-</span>;
  return <>{engines.join(', ')}</>;
}

const REVOKE_TEXT =
  'Its token stops working at once and its connections are closed. Workers using it stop reporting until they get the ' +
  'credentials of a new agent. Its history stays.';

const revokeAgent = (project: Project, agent: Agent) => api.del(`${projectPath(project.slug)}/agents/${agent.id}`);

/** Revoking one agent (its page): the token stops working at once and the agent's connections close. */
export function RevokeAgent(props: { project: Project; agent: Agent; onRevoked: () => void }) {
  return (
    <ConfirmButton
      label="Revoke"
      title={`Revoke ${props.agent.name}?`}
      confirm="Revoke agent"
      danger
      onConfirm={async () => {
        await revokeAgent(props.project, props.agent);
        props.onRevoked();
      }}
    >
      <p>{REVOKE_TEXT}</p>
    </ConfirmButton>
  );
}

/** The list's one revoke confirmation, opened by the rows' buttons through `target`: only this component reads
 * the signal, so opening it does not re-render the (possibly 500) rows. */
function RevokeFromList(props: { project: Project; target: Signal<Agent | null>; onRevoked: () => Promise<void> }) {
  const agent = props.target.value;
  return (
    <ConfirmDialog
      open={agent !== null}
      title={`Revoke ${agent?.name ?? ''}?`}
      confirm="Revoke agent"
      danger
      onClose={() => (props.target.value = null)}
      onConfirm={async () => {
        await revokeAgent(props.project, agent!);
        await props.onRevoked();
      }}
    >
      <p>{REVOKE_TEXT}</p>
    </ConfirmDialog>
  );
}

/** How to connect a first agent; the mint button for those who may mint. */
export function NoAgents(props: { project: Project; onMinted: (m: MintedAgent) => void }) {
  const admin = props.project.role === 'admin';
  return (
    <Empty title="No agent is connected yet">
      <p>
        svc learns about tasks, workers and queues from z4j agents running inside your workers.{' '}
        {admin
          ? 'Create an agent here, then give your workers its configuration: tasks appear as soon as it connects.'
          : 'A project admin creates an agent and gives your workers its configuration; ask one to connect the first agent.'}
      </p>
      {admin && <ConnectAgentButton project={props.project} onMinted={props.onMinted} primary />}
    </Empty>
  );
}

/** How many rows the list shows at first and adds per "Show more": a table of 500 agents takes Chromium a few
 * hundred milliseconds to lay out (see docs/benchmarks.md), so the rest waits until asked for. */
const SHOWN = 50;
/** Above this many agents the list offers its filters. */
const FILTER_FROM = 10;

/** The agents, filtered by name and state, the first SHOWN of them as a table. The cells call their small
 * components as functions: with hundreds of rows, six component instances a row (each with hooks and a
 * signals updater) cost more than the cells' own markup. */
function AgentTable(props: { project: Project; agents: Agent[]; revoking: Signal<Agent | null> }) {
  const [name, setName] = useState('');
  const [state, setState] = useState('');
  const [limit, setLimit] = useState(SHOWN);
  const admin = props.project.role === 'admin';
  const base = projectPath(props.project.slug);
  const needle = name.trim().toLowerCase();
  const matching = props.agents.filter((a) => (!needle || a.name.toLowerCase().includes(needle)) && (!state || a.state === state));
  const rows = matching.slice(0, limit);
  const filter = (apply: () => void) => {
    apply();
    setLimit(SHOWN);
  };
  return (
    <>
      {props.agents.length > FILTER_FROM && (
        <form class="filters" aria-label="Filter the agents" onSubmit={(e) => e.preventDefault()}>
          <div class="field">
            <label for="agent-name">Name contains</label>
            <input id="agent-name" type="search" value={name} onInput={(e) => filter(() => setName(e.currentTarget.value))} />
          </div>
          <div class="field">
            <label for="agent-state">State</label>
            <select id="agent-state" onChange={(e) => filter(() => setState(e.currentTarget.value))}>
              <option value="">Any state</option>
              <option value="online">online</option>
              <option value="offline">offline</option>
              <option value="unknown">never connected</option>
            </select>
          </div>
        </form>
      )}
      {matching.length === 0 ? (
        <Empty title="No agent matches these filters" />
      ) : (
        <Table columns={['Name', 'State', 'Last seen', 'Protocol', 'Engines', 'Created', ...(admin ? ['Actions'] : [])]}>
          {rows.map((a) => (
            <tr key={a.id}>
              <td>
                <a href={`${base}/agents/${a.id}`}>{a.name}</a>
              </td>
              <td>{AgentState({ state: a.state })}</td>
              <td>{Time({ iso: a.last_seen_at })}</td>
              <td>{Protocol({ agent: a })}</td>
              <td>{Engines({ agent: a })}</td>
              <td>{Time({ iso: a.created_at })}</td>
              {admin && (
                <td>
                  <button
                    type="button"
                    class="danger small"
                    aria-label={`Revoke ${a.name}`}
                    onClick={() => (props.revoking.value = a)}
                  >
                    Revoke
                  </button>
                </td>
              )}
            </tr>
          ))}
        </Table>
      )}
      {matching.length > rows.length && (
        <div class="actions">
          <span class="muted small" role="status">{`Showing ${rows.length} of ${plural(matching.length, 'agent')}.`}</span>
          <button type="button" class="secondary" onClick={() => setLimit(limit + SHOWN)}>
            {`Show ${Math.min(SHOWN, matching.length - rows.length)} more`}
          </button>
          <button type="button" class="link" onClick={() => setLimit(matching.length)}>
            Show all
          </button>
        </div>
      )}
    </>
  );
}

export function ProjectAgents({ project }: ProjectPageProps) {
  const agents = useAgents(project.slug);
  const [minted, setMinted] = useState<MintedAgent | null>(null);
  const admin = project.role === 'admin';
  const mintedState = minted ? (agents.data?.find((a) => a.id === minted.agent.id)?.state ?? minted.agent.state) : null;
  // Agents coming online, going offline, minted or revoked anywhere: the list is read again.
  useLive(project.slug, ['agent'], () => agents.reload());
  usePoll(agents.reload, WATCH_MS, mintedState !== null && mintedState !== 'online');
  const onMinted = (m: MintedAgent) => {
    setMinted(m);
    void agents.reload();
  };
  const revoking = useSignal<Agent | null>(null);
  return (
    <div class="stack">
      {admin && <RevokeFromList project={project} target={revoking} onRevoked={agents.reload} />}
      {minted && <MintedAgentPanel project={project} minted={minted} state={mintedState!} onDone={() => setMinted(null)} />}
      <Section
        title="Agents"
        actions={
          <div class="page-actions">
            <RefreshButton onRefresh={agents.reload} busy={agents.loading} />
            {/* With no agents yet the empty state below holds the button. */}
            {admin && (agents.data?.length ?? 0) > 0 && <ConnectAgentButton project={project} onMinted={onMinted} />}
          </div>
        }
      >
        <Loaded resource={agents}>
          {(list) =>
            list.length === 0 ? (
              <NoAgents project={project} onMinted={onMinted} />
            ) : (
              <AgentTable project={project} agents={list} revoking={revoking} />
            )
          }
        </Loaded>
      </Section>
    </div>
  );
}
