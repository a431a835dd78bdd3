// /projects: the projects this user can open; administrators also create, archive and see archived ones.
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { Project } from '../api/types.ts';
import { useResource } from '../lib/use-resource.ts';
import { loadProjects, me } from '../session.ts';
import { Badge, ConfirmButton, Empty, PageHeader, Section, Time } from '../ui/bits.tsx';
import { ListTable } from '../ui/table.tsx';
import { TextField, present } from '../ui/form.tsx';
import { FormDialog } from '../ui/form-dialog.tsx';

export async function archiveProject(slug: string): Promise<void> {
  await api.del(`/projects/${encodeURIComponent(slug)}`);
  await loadProjects();
}

function CreateProject(props: { onCreated: () => Promise<void> }) {
  return (
    <FormDialog
      button="New project"
      buttonClass="primary"
      title="New project"
      submit="Create project"
      onSubmit={async (v) => {
        await api.post<Project>('/projects', { slug: v.slug?.trim(), name: v.name?.trim(), ...present(v, 'description') });
        await props.onCreated();
      }}
    >
      <TextField label="Name" name="name" required maxLength={200} autoFocus />
      <TextField
        label="Slug"
        name="slug"
        required
        minLength={2}
        maxLength={63}
        hint="Lower-case letters, digits and dashes; used in URLs and by agents. It cannot change later."
      />
      <TextField label="Description" name="description" maxLength={2000} />
    </FormDialog>
  );
}

export function ProjectsPage() {
  const admin = me.value?.is_admin ?? false;
  const [archived, setArchived] = useState(false);
  const list = useResource(() => api.get<Project[]>('/projects', { include_archived: archived || undefined }), [archived]);
  const changed = async () => {
    await Promise.all([list.reload(), loadProjects()]);
  };
  return (
    <>
      <PageHeader
        title="Projects"
        lead="Each project groups agents, workers and tasks, with its own members."
        actions={admin && <CreateProject onCreated={changed} />}
      />
      <Section
        title="All projects"
        actions={
          admin && (
            <label class="inline">
              <input
                type="checkbox"
                checked={archived}
                onChange={(e) => setArchived((e.currentTarget as HTMLInputElement).checked)}
              />{' '}
              Show archived
            </label>
          )
        }
      >
        <ListTable
          resource={list}
          columns={['Name', 'Slug', 'Your role', 'Created', ...(admin ? ['Actions'] : [])]}
          empty={
            <Empty title="No projects yet">
              {admin ? (
                <p>Create one with “New project”.</p>
              ) : (
                <p>Ask a project admin to invite you; the invitation link brings you straight in.</p>
              )}
            </Empty>
          }
          row={(p) => (
            <tr key={p.id}>
              <td>
                {p.is_active ? <a href={`/projects/${p.slug}`}>{p.name}</a> : p.name}
                {p.description && <div class="muted small">{p.description}</div>}
              </td>
              <td>
                <code>{p.slug}</code>
              </td>
              <td>{p.is_active ? p.role : <Badge tone="warn">archived</Badge>}</td>
              <td>
                <Time iso={p.created_at} />
              </td>
              {admin && (
                <td>
                  {p.is_active && (
                    <ConfirmButton
                      label="Archive"
                      what={p.name}
                      confirm="Archive project"
                      danger
                      small
                      onConfirm={async () => {
                        await archiveProject(p.slug);
                        await list.reload();
                      }}
                    >
                      <p>
                        Its agents are refused from then on and it leaves everyone's project list. Its history stays in the audit
                        log.
                      </p>
                    </ConfirmButton>
                  )}
                </td>
              )}
            </tr>
          )}
        />
      </Section>
    </>
  );
}
