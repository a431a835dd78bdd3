// /projects/:slug/commands: the commands issued to the project's agents, newest first, with their outcome
// (status, result, error); filtered by status, keyset-paged. The rows are shared with the task page, which
// lists the commands aimed at one task.
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import { COMMAND_STATUSES, type Command, type CommandPage } from '../../api/types.ts';
import { useLivePaged } from '../../lib/live.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { Empty, Time } from '../../ui/bits.tsx';
import { jsonLine } from '../../ui/json.tsx';
import { LiveBadge } from '../../ui/live-badge.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';
import { CommandStatusBadge } from '../../ui/status.tsx';
import type { ProjectPageProps } from './sections.ts';
import { commandsGet, projectPath } from './requests.ts';
import { useAgents } from './use-agents.ts';

export const COMMAND_COLUMNS = ['Issued', 'Action', 'Target', 'Agent', 'Status', 'Outcome'];

/** The answer in a few words: the error, the result, or what the command waits for. */
export function Outcome(props: { command: Command }) {
  const c = props.command;
  if (c.error) return <span class="text-bad">{c.error}</span>;
  if (c.result) return <code>{jsonLine(c.result)}</code>;
  if (c.status === 'pending' || c.status === 'buffered') return <span class="muted">waiting for the agent to pick it up</span>;
  if (c.status === 'dispatched') return <span class="muted">delivered, waiting for the answer</span>;
  return <span class="muted">-</span>;
}

/** A row of the commands tables (cells call small components as functions, as in the agents list). */
export function commandRow(slug: string, c: Command, agentName: string) {
  return (
    <tr key={c.id}>
      <td>{Time({ iso: c.issued_at })}</td>
      <td>
        <a href={`/projects/${slug}/commands/${c.id}`}>
          <code>{c.action}</code>
        </a>
      </td>
      <td>
        <span class="muted">{c.target_type}</span> {c.target_id && <code>{c.target_id}</code>}
      </td>
      <td>{agentName}</td>
      <td>{CommandStatusBadge({ status: c.status })}</td>
      <td>{Outcome({ command: c })}</td>
    </tr>
  );
}

export function ProjectCommands({ project }: ProjectPageProps) {
  const { query, route, path } = useLocation();
  const status = query.status ?? '';
  const agents = useAgents(project.slug);
  const paged = usePaged(
    (cursor) => api.get<CommandPage>(...commandsGet(project.slug, status, cursor)),
    [project.slug, status],
  );
  // Issued, delivered and answered commands update in place (the first page read again on a notice, a command
  // it names further down on its own).
  const commands = useLivePaged(paged, project.slug, 'command', () => api.get<CommandPage>(...commandsGet(project.slug, status, null)), (c) => c.id, {
    noticeIdOf: (c) => c.id,
    read: (c) => api.get<Command>(`${projectPath(project.slug)}/commands/${c.id}`),
  });
  return (
    <div class="stack">
      <form class="filters" aria-label="Filter the commands" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="command-status">Status</label>
          <select
            id="command-status"
            onChange={(e) => {
              const value = (e.currentTarget as HTMLSelectElement).value;
              route(value ? `${path}?status=${value}` : path, true);
            }}
          >
            <option value="">Any status</option>
            {COMMAND_STATUSES.map((s) => (
              <option key={s} value={s} selected={s === status}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </div>
      </form>
      <PagedSection
        title="Commands"
        paged={commands}
        actions={<LiveBadge state={commands.live} />}
        what="command"
        columns={COMMAND_COLUMNS}
        empty={
          <Empty title={status ? `No ${status.replace('_', ' ')} commands` : 'No commands yet'}>
            <p>
              {status
                ? 'Choose another status to see the rest.'
                : 'Operators retry or cancel a task from its page; the commands and their outcome are listed here.'}{' '}
              <a href={`/projects/${project.slug}/tasks`}>Go to the tasks</a>.
            </p>
          </Empty>
        }
        row={(c) => commandRow(project.slug, c, agents.nameOf(c.agent_id))}
      />
    </div>
  );
}
