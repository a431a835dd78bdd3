// /projects/:slug/commands/:command_id: one command, what it asked the agent to do and what came back; the
// page keeps asking while the command is still under way.
import { api } from '../../api/client.ts';
import type { Command } from '../../api/types.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { concerns, useLive } from '../../lib/live.ts';
import { useResource } from '../../lib/use-resource.ts';
import { me } from '../../session.ts';
import { BackLink, Facts, Loaded, Section, Time } from '../../ui/bits.tsx';
import { JsonBlock } from '../../ui/json.tsx';
import { COMMAND_ENDED, CommandStatusBadge } from '../../ui/status.tsx';
import type { ProjectPageProps } from './sections.ts';
import { taskHref } from './task-link.ts';
import { projectPath } from './requests.ts';
import { useAgents } from './use-agents.ts';

const WATCH_MS = 1500;

/** A task command's target (`celery:<task id>`) as a link to the task. */
function Target(props: { slug: string; command: Command }) {
  const { target_type: type, target_id: id } = props.command;
  const colon = id?.indexOf(':') ?? -1;
  if (type === 'task' && id && colon > 0) {
    return <a href={taskHref(props.slug, { engine: id.slice(0, colon), task_id: id.slice(colon + 1) })}>{`task ${id}`}</a>;
  }
  return (
    <>
      {type} {id && <code>{id}</code>}
    </>
  );
}

function CommandFacts(props: { slug: string; command: Command; agentName: string }) {
  const { slug, command: c } = props;
  const ended = COMMAND_ENDED.has(c.status);
  const by = c.issued_by === me.value?.id ? ' by you' : ` by user ${c.issued_by?.slice(0, 8)}`;
  return (
    <Facts
      items={[
        [
          'Status',
          <>
            <CommandStatusBadge status={c.status} />
            {!ended && <span class="muted"> — this page updates by itself</span>}
          </>,
          'command-status',
        ],
        ['Target', <Target slug={slug} command={c} />],
        ['Agent', c.agent_id ? <a href={`/projects/${slug}/agents/${c.agent_id}`}>{props.agentName}</a> : '-'],
        [
          'Issued',
          <>
            <Time iso={c.issued_at} />
            {c.issued_by && <span class="muted">{by}</span>}
          </>,
        ],
        ['Delivered', <Time iso={c.dispatched_at} empty="not yet" />],
        ['Finished', <Time iso={c.completed_at} empty="not yet" />],
        c.timeout_at !== null && !ended && ['Times out', <Time iso={c.timeout_at} />],
        c.idempotency_key !== null && ['Idempotency key', <code>{c.idempotency_key}</code>],
        ['Command id', <code>{c.id}</code>],
      ]}
    />
  );
}

export function CommandDetail({ project, params }: ProjectPageProps) {
  const path = `${projectPath(project.slug)}/commands/${encodeURIComponent(params.command_id ?? '')}`;
  const command = useResource(() => api.get<Command>(path), [path]);
  const agents = useAgents(project.slug);
  // Polled only while the stream is down (fallbackMs 0: the poll below is this page's fallback).
  const live = useLive(project.slug, ['command'], (e) => concerns(e, params.command_id) && command.reload(), { fallbackMs: 0 });
  usePoll(command.reload, WATCH_MS, live === 'down' && command.data !== undefined && !COMMAND_ENDED.has(command.data.status));
  return (
    <div class="stack">
      <BackLink href={`/projects/${project.slug}/commands`}>All commands</BackLink>
      <Loaded resource={command}>
        {(c) => (
          <>
            <Section title={`Command ${c.action}`}>
              <CommandFacts slug={project.slug} command={c} agentName={agents.nameOf(c.agent_id)} />
            </Section>
            <Section title="Outcome">
              {c.error && (
                <div class="notice error" role="status">
                  <p>{c.error}</p>
                </div>
              )}
              <JsonBlock
                value={c.result}
                label="Result"
                empty={COMMAND_ENDED.has(c.status) ? 'No result was reported.' : 'No answer from the agent yet.'}
              />
            </Section>
            <Section title="Parameters sent">
              <JsonBlock value={c.payload} label="Parameters" />
            </Section>
          </>
        )}
      </Loaded>
    </div>
  );
}
