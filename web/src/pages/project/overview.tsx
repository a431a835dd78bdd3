// /projects/:slug: what the project is, its agents at a glance (or how to connect the first one), what to do
// next in it, and (for its admins) its name and description.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import type { MintedAgent, Project } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { useLive } from '../../lib/live.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { me } from '../../session.ts';
import { ConfirmButton, Loaded, Section, Time } from '../../ui/bits.tsx';
import { Form, TextField } from '../../ui/form.tsx';
import { archiveProject } from '../projects.tsx';
import { MintedAgentPanel } from './agent-connect.tsx';
import { NoAgents } from './agents.tsx';
import type { ProjectPageProps } from './sections.ts';
import { useAgents } from './use-agents.ts';

const WATCH_MS = 3000;

/** The agents at a glance; with none yet, how to connect the first (and the secrets once minted here). */
function AgentsSummary(props: { project: Project }) {
  const { project } = props;
  const agents = useAgents(project.slug);
  const [minted, setMinted] = useState<MintedAgent | null>(null);
  const mintedState = minted ? (agents.data?.find((a) => a.id === minted.agent.id)?.state ?? minted.agent.state) : null;
  useLive(project.slug, ['agent'], () => agents.reload());
  usePoll(agents.reload, WATCH_MS, mintedState !== null && mintedState !== 'online');
  const base = `/projects/${project.slug}`;
  if (minted) return <MintedAgentPanel project={project} minted={minted} state={mintedState!} onDone={() => setMinted(null)} />;
  return (
    <Section title="Agents and tasks">
      <Loaded resource={agents}>
        {(list) =>
          list.length === 0 ? (
            <NoAgents
              project={project}
              onMinted={(m) => {
                setMinted(m);
                void agents.reload();
              }}
            />
          ) : (
            <p data-testid="agents-summary">
              {`${list.filter((a) => a.state === 'online').length} of ${plural(list.length, 'agent')} online. `}
              See the <a href={`${base}/agents`}>agents</a>, <a href={`${base}/tasks`}>tasks</a>,{' '}
              <a href={`${base}/workers`}>workers</a>, <a href={`${base}/queues`}>queues</a> and{' '}
              <a href={`${base}/commands`}>commands</a>.
            </p>
          )
        }
      </Loaded>
    </Section>
  );
}

export function ProjectOverview({ project, reloadProject }: ProjectPageProps) {
  const { route } = useLocation();
  const isAdmin = project.role === 'admin';
  return (
    <div class="stack">
      {project.description && <p>{project.description}</p>}
      <AgentsSummary project={project} />
      <Section title="Next steps">
        <ul class="steps">
          {isAdmin && (
            <li>
              <a href={`/projects/${project.slug}/members`}>Invite your team</a> and give each person a role: viewers read,
              operators also issue commands, admins manage members and agents.
            </li>
          )}
          <li>
            <a href="/account/api-keys">Create an API key</a> for scripts that read this project.
          </li>
          <li>
            Follow what happens in the <a href={`/activity?project=${project.slug}`}>activity feed</a>.
          </li>
        </ul>
        <dl class="facts">
          <dt>Created</dt>
          <dd>
            <Time iso={project.created_at} />
          </dd>
          <dt>Last changed</dt>
          <dd>
            <Time iso={project.updated_at} />
          </dd>
        </dl>
      </Section>
      {isAdmin && (
        <Section title="Settings">
          <Form
            submit="Save"
            busyText="Saving…"
            onSubmit={async (v) => {
              await api.patch(`/projects/${project.slug}`, { name: v.name?.trim(), description: v.description ?? '' });
              await reloadProject();
            }}
          >
            <TextField label="Name" name="name" defaultValue={project.name} required maxLength={200} />
            <TextField label="Description" name="description" defaultValue={project.description} maxLength={2000} />
          </Form>
        </Section>
      )}
      {me.value?.is_admin && (
        <Section title="Archive">
          <p>Archiving refuses the project's agents and hides it from every list. It cannot be undone from the dashboard.</p>
          <ConfirmButton
            label="Archive this project"
            title={`Archive ${project.name}?`}
            confirm="Archive project"
            danger
            onConfirm={async () => {
              await archiveProject(project.slug);
              route('/projects', true);
            }}
          >
            <p>Its agents are refused from then on. Its history stays in the audit log.</p>
          </ConfirmButton>
        </Section>
      )}
    </div>
  );
}
