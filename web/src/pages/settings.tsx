// /settings (global administrators): every effective SVC_* setting with its value and where it came from, found
// by name, description or value and narrowed by source. Secret values arrive masked from the server and are shown
// exactly so; this page has no way to reveal them (`svc config show --reveal-secrets` on the host does).
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { Setting, Settings } from '../api/types.ts';
import { plural } from '../lib/format.ts';
import { useResource } from '../lib/use-resource.ts';
import { me } from '../session.ts';
import { Badge, Empty, Facts, Loaded, PageHeader, RefreshButton, Section } from '../ui/bits.tsx';
import { Redirect } from '../ui/link.tsx';
import { Table } from '../ui/table.tsx';

const SOURCES: { value: Setting['source']; label: string }[] = [
  { value: 'env', label: 'environment' },
  { value: 'config.env', label: 'config.env' },
  { value: 'secret.env', label: 'secret.env' },
  { value: 'default', label: 'default' },
];
const sourceLabel = (s: Setting['source']) => SOURCES.find((x) => x.value === s)?.label ?? s;

function SettingRow(props: { setting: Setting }) {
  const s = props.setting;
  return (
    <tr>
      <td>
        <code>{s.name}</code>
        <div class="muted small">{s.description}</div>
      </td>
      <td class="value">
        {s.value === '' ? <span class="muted">(empty)</span> : <code class="wrap">{s.value}</code>}
        {s.is_secret && (
          <>
            {' '}
            <Badge tone="warn">secret</Badge>
          </>
        )}
      </td>
      <td>
        <Badge tone={s.source === 'default' ? 'muted' : 'info'}>{sourceLabel(s.source)}</Badge>
      </td>
    </tr>
  );
}

function SettingsList(props: { data: Settings }) {
  const [query, setQuery] = useState('');
  const [source, setSource] = useState('');
  const words = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  const shown = props.data.settings.filter(
    (s) =>
      (!source || (source === 'changed' ? s.source !== 'default' : s.source === source)) &&
      words.every((w) => `${s.name} ${s.description} ${s.is_secret ? '' : s.value}`.toLowerCase().includes(w)),
  );
  const total = props.data.settings.length;
  return (
    <>
      <form class="filters" aria-label="Filter the settings" onSubmit={(e) => e.preventDefault()}>
        <div class="field">
          <label for="settings-query">Find</label>
          <input
            id="settings-query"
            type="search"
            value={query}
            placeholder="e.g. audit, timeout, SVC_TLS"
            onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)}
          />
        </div>
        <div class="field">
          <label for="settings-source">Source</label>
          <select id="settings-source" onChange={(e) => setSource((e.currentTarget as HTMLSelectElement).value)}>
            <option value="" selected={!source}>
              Any source
            </option>
            <option value="changed" selected={source === 'changed'}>
              Not the default
            </option>
            {SOURCES.map((s) => (
              <option key={s.value} value={s.value} selected={source === s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </div>
      </form>
      <p class="muted small" role="status" data-testid="settings-count">
        {shown.length === total ? `${plural(total, 'setting')}` : `${shown.length} of ${plural(total, 'setting')}`}
      </p>
      {shown.length === 0 ? (
        <Empty title="No setting matches">
          <p>Try fewer words or another source. Secret values are not searched.</p>
        </Empty>
      ) : (
        <Table columns={['Setting', 'Value', 'Source']}>
          {shown.map((s) => (
            <SettingRow key={s.name} setting={s} />
          ))}
        </Table>
      )}
    </>
  );
}

function SettingsView() {
  const settings = useResource(() => api.get<Settings>('/admin/settings'), []);
  return (
    <>
      <PageHeader
        title="Settings"
        lead={
          <>
            The settings this svc process runs with and where each came from. Change them in the environment or in{' '}
            <code>config.env</code> in the home directory, then restart svc (docs/configuration.md lists every one).
          </>
        }
      />
      <div class="stack">
        <Loaded resource={settings}>
          {(d) => (
            <>
              <Section title="Home directory">
                <Facts
                  items={[
                    ['Home directory', <code>{d.home}</code>, 'settings-home'],
                    ['Settings file', <code>{`${d.home.replace(/\/$/, '')}/config.env`}</code>],
                    ['Minted secrets', <code>{`${d.home.replace(/\/$/, '')}/secret.env`}</code>],
                  ]}
                />
                <div class="notice warn">
                  <p>
                    Secret values are masked as the server sends them. Plain URL settings (the database URL among them) are shown
                    as configured and may contain credentials: treat this page as sensitive.
                  </p>
                </div>
              </Section>
              <Section title="Effective settings" actions={<RefreshButton onRefresh={settings.reload} busy={settings.loading} />}>
                <SettingsList data={d} />
              </Section>
            </>
          )}
        </Loaded>
      </div>
    </>
  );
}

export function SettingsPage() {
  // Administrators only, as /users: the link is not shown to others and the address leads them back.
  if (me.value && !me.value.is_admin) return <Redirect to="/projects" />;
  return <SettingsView />;
}
