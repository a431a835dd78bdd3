// The task page's commands: retry and cancel for operators (POST /commands/retry-task and /cancel-task), sent
// to the agent that last reported the task unless another is chosen, and the commands aimed at this task
// with their outcome, watched until each has one. Each is sent with an Idempotency-Key, so a repeated click or a
// retry after a lost answer does not retry (or cancel) the task twice.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Agent, Command, CommandPage, Project, TaskDetail } from '../../api/types.ts';
import { idempotent, useIdempotencyKey } from '../../lib/idempotency.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { useResource } from '../../lib/use-resource.ts';
import { ConfirmButton, Empty, Section } from '../../ui/bits.tsx';
import { ListTable } from '../../ui/table.tsx';
import { COMMAND_ENDED, TASK_RUNNING } from '../../ui/status.tsx';
import { COMMAND_COLUMNS, commandRow } from './commands.tsx';
import { projectPath } from './requests.ts';

const WATCH_MS = 1000;
/** GET /commands cannot filter by target: the task's commands are looked for among the newest ones. */
const SCAN = 200;

/** The agent that reported the task last, if it is still a live agent of the project. */
function reporter(task: TaskDetail, agents: Agent[]): string {
  for (let i = task.events.length - 1; i >= 0; i--) {
    const id = task.events[i]!.agent_id;
    if (agents.some((a) => a.id === id)) return id;
  }
  return '';
}

function Actions(props: { project: Project; task: TaskDetail; agents: Agent[]; onIssued: (c: Command) => Promise<void> }) {
  const { task, agents } = props;
  const [agentId, setAgentId] = useState(() => reporter(task, agents));
  // One key per intent (the action, to this agent): it changes once a command has been issued.
  const [issuedCount, setIssuedCount] = useState(0);
  const keys = {
    'retry-task': useIdempotencyKey(`retry-task ${agentId} ${issuedCount}`),
    'cancel-task': useIdempotencyKey(`cancel-task ${agentId} ${issuedCount}`),
  };
  const issue = async (what: 'retry-task' | 'cancel-task') => {
    const body = { engine: task.engine, task_id: task.task_id, ...(agentId ? { agent_id: agentId } : {}) };
    const c = await api.post<Command>(`${projectPath(props.project.slug)}/commands/${what}`, body, idempotent(keys[what]));
    setIssuedCount((n) => n + 1);
    await props.onIssued(c);
  };
  return (
    <div class="inline-form">
      <div class="field">
        <label for="command-agent">Send to</label>
        <select id="command-agent" onChange={(e) => setAgentId((e.currentTarget as HTMLSelectElement).value)}>
          <option value="" selected={agentId === ''}>{`Any online agent with the ${task.engine} engine`}</option>
          {agents.map((a) => (
            <option key={a.id} value={a.id} selected={a.id === agentId}>
              {`${a.name} (${a.state === 'unknown' ? 'never connected' : a.state})`}
            </option>
          ))}
        </select>
      </div>
      <div class="actions">
        <ConfirmButton label="Retry" title="Retry this task?" confirm="Retry task" onConfirm={() => issue('retry-task')}>
          <p>
            The agent asks {task.engine} to run the task again with its original arguments: svc does not send them, the agent
            finds them in the engine (Celery keeps them only with <code>result_extended=True</code>; otherwise the command fails
            and says why).
          </p>
        </ConfirmButton>
        {TASK_RUNNING.has(task.state) && (
          <ConfirmButton
            label="Cancel"
            title="Cancel this task?"
            confirm="Cancel task"
            danger
            onConfirm={() => issue('cancel-task')}
          >
            <p>The agent asks {task.engine} to revoke the task; one that is already running may be stopped.</p>
          </ConfirmButton>
        )}
      </div>
    </div>
  );
}

export function TaskCommands(props: {
  project: Project;
  task: TaskDetail;
  agents: Agent[];
  nameOf: (id: string | null) => string;
}) {
  const { project, task } = props;
  const target = `${task.engine}:${task.task_id}`;
  const commands = useResource(async () => {
    const page = await api.get<CommandPage>(`${projectPath(project.slug)}/commands`, { limit: SCAN });
    return page.items.filter((c) => c.target_type === 'task' && c.target_id === target);
  }, [project.slug, target]);
  const [issued, setIssued] = useState<Command | null>(null);
  usePoll(commands.reload, WATCH_MS, commands.data?.some((c) => !COMMAND_ENDED.has(c.status)) ?? false);
  const operator = project.role !== 'viewer';
  return (
    <Section title="Commands">
      {operator ? (
        <Actions
          project={project}
          task={task}
          agents={props.agents}
          onIssued={async (c) => {
            setIssued(c);
            await commands.reload();
          }}
        />
      ) : (
        <p class="muted">Operators and admins of the project can retry or cancel tasks.</p>
      )}
      {issued && (
        <p class="notice info" role="status">
          Command <a href={`/projects/${project.slug}/commands/${issued.id}`}>{issued.action}</a> created. Its status and outcome
          appear below as the agent answers.
        </p>
      )}
      <ListTable
        resource={commands}
        columns={COMMAND_COLUMNS}
        empty={<Empty title="No commands for this task" />}
        row={(c) => commandRow(project.slug, c, props.nameOf(c.agent_id))}
      />
    </Section>
  );
}
