// /projects/:slug: what the project is, what to do next in it, and (for its admins) its name and description.
import { useLocation } from 'preact-iso';
import { api } from '../../api/client.ts';
import { me } from '../../session.ts';
import { ConfirmButton, Section, Time } from '../../ui/bits.tsx';
import { Form, TextField } from '../../ui/form.tsx';
import { archiveProject } from '../projects.tsx';
import type { ProjectPageProps } from './sections.ts';

export function ProjectOverview({ project, reloadProject }: ProjectPageProps) {
  const { route } = useLocation();
  const isAdmin = project.role === 'admin';
  return (
    <div class="stack">
      {project.description && <p>{project.description}</p>}
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
