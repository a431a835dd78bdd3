// /account/api-keys: keys for scripts and tools (Authorization: Bearer svc_…). The secret is in the create
// answer only, so it is shown once with a copy button; the list shows prefixes, scopes, use and revocation.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { ApiKey, ApiKeyScopes } from '../../api/types.ts';
import { useResource } from '../../lib/use-resource.ts';
import { me, projects } from '../../session.ts';
import { Badge, ConfirmButton, Empty, Loaded, PageHeader, Section, Time } from '../../ui/bits.tsx';
import { ListTable } from '../../ui/table.tsx';
import { SecretOnce } from '../../ui/copy.tsx';
import { Form, SelectField, TextField } from '../../ui/form.tsx';

const SCOPE_TEXT: Record<string, string> = {
  'projects:read': 'read projects',
  'agents:read': 'read agents',
  'tasks:read': 'read tasks, workers and queues',
  'commands:read': 'read commands',
  'commands:write': 'issue commands (implies read)',
  'notifications:read': 'read notification channels, subscriptions, the inbox and delivery logs',
  'notifications:write': 'change and test them, mark the inbox read (implies read)',
  'schedules:read': 'read schedules, their runs, fires and misfires',
  'schedules:write': 'control schedules (enable, disable, run now) and, as a project admin, define them (implies read)',
  'users:read': 'read users (administrators)',
  'admin:*': 'everything a key may reach (administrators)',
};

function status(k: ApiKey) {
  if (k.revoked_at) return <Badge>revoked</Badge>;
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return <Badge tone="warn">expired</Badge>;
  return <Badge tone="ok">active</Badge>;
}

function CreateKey(props: { onCreated: (secret: string) => Promise<void> }) {
  const scopes = useResource(() => api.get<ApiKeyScopes>('/api-keys/scopes'), []);
  const admin = me.value?.is_admin ?? false;
  return (
    <Loaded resource={scopes}>
      {(s) => (
        <Form
          submit="Create key"
          busyText="Creating…"
          resetOnSuccess
          label="Create an API key"
          onSubmit={async (v, form) => {
            const chosen = new FormData(form).getAll('scope').map(String);
            if (chosen.length === 0) throw new Error('Pick at least one scope.');
            const r = await api.post<ApiKey & { token: string }>('/api-keys', {
              name: v.name?.trim(),
              scopes: chosen,
              ...(v.project_id ? { project_id: v.project_id } : {}),
              ...(v.expires_in_days ? { expires_in_days: Number(v.expires_in_days) } : {}),
            });
            await props.onCreated(r.token);
          }}
        >
          <TextField label="Name" name="name" required maxLength={200} hint="What uses it, e.g. “nightly report script”." />
          <fieldset class="field">
            <legend>Scopes</legend>
            {s.scopes
              .filter((scope) => admin || !s.admin_only.includes(scope))
              .map((scope) => (
                <label key={scope} class="check-row">
                  <input type="checkbox" name="scope" value={scope} defaultChecked={scope === 'projects:read'} />{' '}
                  <code>{scope}</code> <span class="muted">{SCOPE_TEXT[scope] ?? ''}</span>
                </label>
              ))}
          </fieldset>
          <SelectField
            label="Projects"
            name="project_id"
            options={[
              { value: '', label: 'Every project I can reach' },
              ...projects.value.map((p) => ({ value: p.id, label: `Only ${p.name}` })),
            ]}
          />
          <TextField
            label="Expires after (days)"
            name="expires_in_days"
            type="number"
            min={1}
            max={3650}
            hint="Leave empty for a key that does not expire."
          />
        </Form>
      )}
    </Loaded>
  );
}

export function ApiKeysPage() {
  const keys = useResource(() => api.get<ApiKey[]>('/api-keys'), []);
  const [secret, setSecret] = useState<string | null>(null);
  const projectName = (id: string | null) =>
    id ? (projects.value.find((p) => p.id === id)?.name ?? id.slice(0, 8)) : 'every project';
  return (
    <>
      <PageHeader
        title="API keys"
        lead={
          <>
            For scripts and tools: send <code>Authorization: Bearer svc_…</code>. Keys never reach account settings.
          </>
        }
      />
      <div class="stack">
        <Section title="New key">
          <CreateKey
            onCreated={async (s) => {
              setSecret(s);
              await keys.reload();
            }}
          />
          {secret && <SecretOnce label="Your new API key" value={secret} testId="api-key-secret" />}
        </Section>
        <Section title="Your keys">
          <ListTable
            resource={keys}
            columns={['Name', 'Key', 'Scopes', 'Projects', 'Last used', 'Status', 'Actions']}
            empty={
              <Empty title="No API keys yet">
                <p>Create one above for each script or tool, so you can revoke them one by one.</p>
              </Empty>
            }
            row={(k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td>{projectName(k.project_id)}</td>
                <td>
                  <Time iso={k.last_used_at} />
                </td>
                <td>
                  {status(k)}
                  {k.expires_at && !k.revoked_at && (
                    <div class="muted small">
                      expires <Time iso={k.expires_at} />
                    </div>
                  )}
                </td>
                <td>
                  {!k.revoked_at && (
                    <ConfirmButton
                      label="Revoke"
                      what={k.name}
                      confirm="Revoke key"
                      danger
                      small
                      onConfirm={async () => {
                        await api.del(`/api-keys/${k.id}`);
                        await keys.reload();
                      }}
                    >
                      <p>Anything using it is refused from its next request.</p>
                    </ConfirmButton>
                  )}
                </td>
              </tr>
            )}
          />
        </Section>
      </div>
    </>
  );
}
