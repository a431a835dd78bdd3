// /system (global administrators): whether every part of this svc process works (the deep health report, checked
// again on request), what it runs on (process, operating system, database), and which versions are installed,
// with a check against the release manifest at SVC_VERSION_CHECK_URL. /health stays the quick page for everyone.
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../api/client.ts';
import type { DeepEntry, DeepReport, SystemReport, UpdateCheck, Versions } from '../api/types.ts';
import { duration, plural } from '../lib/format.ts';
import { useResource } from '../lib/use-resource.ts';
import { me } from '../session.ts';
import { Badge, Facts, Loaded, PageHeader, RefreshButton, Section, Time } from '../ui/bits.tsx';
import { ErrorNotice } from '../ui/errors.tsx';
import { jsonText } from '../ui/json.tsx';
import { Redirect } from '../ui/link.tsx';
import { Table } from '../ui/table.tsx';

/** 1536 -> "1.5 KiB". */
function bytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** 93784 -> "1 day 2 h 3 min". */
function uptime(seconds: number): string {
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  if (d > 0) return `${plural(d, 'day')} ${h} h ${m} min`;
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${seconds % 60} s`;
  return `${seconds} s`;
}

const CHECKPOINTS: Record<SystemReport['database']['checkpoints'], string> = {
  thread: 'WAL checkpoints in their own thread',
  inline: 'WAL checkpoints inline after commits',
  fallback: 'WAL checkpoints inline (the checkpoint thread failed)',
  none: 'no WAL checkpoints (PostgreSQL)',
};

function EntryStatus(props: { status: DeepEntry['status'] }) {
  if (props.status === 'ok') return <Badge tone="ok">ok</Badge>;
  if (props.status === 'failed') return <Badge tone="bad">failed</Badge>;
  return <Badge tone="muted">off</Badge>;
}

function DeepRow(props: { entry: DeepEntry }) {
  const e = props.entry;
  const failed = e.status === 'failed';
  return (
    <tr data-check={e.name} data-status={e.status}>
      <td>
        <code>{e.name}</code>
      </td>
      <td>
        <EntryStatus status={e.status} />
      </td>
      <td>
        <span class={failed ? 'text-bad' : undefined}>{e.detail}</span>
        {Object.keys(e.data).length > 0 && (
          <details>
            <summary class="small">What was measured</summary>
            <pre class="code-block" tabIndex={0} aria-label={`Data of ${e.name}`}>
              {jsonText(e.data)}
            </pre>
          </details>
        )}
      </td>
      <td>{duration(e.duration_ms)}</td>
    </tr>
  );
}

/** The deep report as a result, failed or not (it answers 503 with the same body when a check failed). */
function DeepHealth() {
  const report = useResource(() => api.get<DeepReport>('/health/deep', undefined, { answerStatuses: [503] }), []);
  return (
    <Section title="Subsystem checks" actions={<RefreshButton onRefresh={report.reload} busy={report.loading} />}>
      <Loaded resource={report}>
        {(r) => {
          const failed = r.entries.filter((e) => e.status === 'failed');
          const c = r.coverage;
          return (
            <>
              {failed.length === 0 ? (
                <div class="notice ok" role="status" data-testid="deep-summary">
                  <p>
                    <strong>Every check passed.</strong> {plural(c.checked - c.disabled, 'check')} ok
                    {c.disabled > 0 && `, ${c.disabled} not configured`}; checked <Time iso={r.checked_at} /> by worker process{' '}
                    {r.worker + 1}.
                  </p>
                </div>
              ) : (
                <div class="notice error" role="status" data-testid="deep-summary">
                  <p>
                    <strong>
                      {plural(failed.length, 'check')} of {c.checked} failed.
                    </strong>{' '}
                    Checked <Time iso={r.checked_at} /> by worker process {r.worker + 1}.
                  </p>
                  <ul>
                    {failed.map((e) => (
                      <li key={e.name}>
                        <code>{e.name}</code>: {e.detail}
                      </li>
                    ))}
                  </ul>
                </div>
              )}
              <Table columns={['Check', 'Status', 'Detail', 'Took']}>
                {r.entries.map((e) => (
                  <DeepRow key={e.name} entry={e} />
                ))}
              </Table>
              <p class="small" data-testid="deep-coverage">
                {plural(c.checked, 'check')}: {c.checked - c.failed - c.disabled} ok, {c.failed} failed, {c.disabled} not configured.
                {c.not_covered.length > 0 && ' Not covered by this report:'}
              </p>
              {c.not_covered.length > 0 && (
                <ul class="small">
                  {c.not_covered.map((n) => (
                    <li key={n}>{n}</li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </Loaded>
    </Section>
  );
}

function SystemFacts() {
  const system = useResource(() => api.get<SystemReport>('/health/system'), []);
  return (
    <Section title="Process and host" actions={<RefreshButton onRefresh={system.reload} busy={system.loading} />}>
      <Loaded resource={system}>
        {(s) => (
          <Facts
            items={[
              ['svc', `${s.version} (build ${s.build_commit})`, 'system-version'],
              ['Bun runtime', s.runtime.bun, 'system-bun'],
              ['Operating system', `${s.os.platform} ${s.os.release}`, 'system-os'],
              ['Architecture', s.os.arch, 'system-arch'],
              ['Process id', String(s.pid), 'system-pid'],
              s.worker.count > 1 && ['Worker process', `${s.worker.index + 1} of ${s.worker.count}`],
              ['Up for', uptime(s.uptime_seconds)],
              [
                'Database',
                <>
                  {s.database.type === 'sqlite' ? 'SQLite' : 'PostgreSQL'} {s.database.version}
                  <span class="muted"> · {CHECKPOINTS[s.database.checkpoints]}</span>
                </>,
                'system-database',
              ],
              ['Database size', bytes(s.database.size_bytes), 'system-database-size'],
              [
                'Database connections',
                s.database.type === 'sqlite' ? `${s.database.connections} (this process)` : String(s.database.connections),
                'system-database-connections',
              ],
            ]}
          />
        )}
      </Loaded>
    </Section>
  );
}

/** The button and what the release manifest said: up to date, newer packages, the check turned off, or why it failed. */
function UpdateCheckResult(props: { result: UpdateCheck | null; error: ApiError | null }) {
  const { result, error } = props;
  if (error?.code === 'check_disabled')
    return (
      <div class="notice info" role="status" data-testid="update-result">
        <p>
          <strong>The version check is off.</strong> Set <code>SVC_VERSION_CHECK_URL</code> to the address of a release manifest
          (see docs/operations.md, “Upgrading”) and restart svc to turn it on.
        </p>
      </div>
    );
  if (error) return <ErrorNotice error={error} title="The version check failed" />;
  if (!result) return null;
  const when = (
    <>
      checked <Time iso={result.checked_at} />
      {result.cached && ' (remembered for an hour)'}
    </>
  );
  if (result.updates.length === 0)
    return (
      <div class="notice ok" role="status" data-testid="update-result">
        <p>
          <strong>Up to date.</strong> No package has a newer release; {when}.
        </p>
      </div>
    );
  return (
    <div class="notice warn" role="status" data-testid="update-result">
      <p>
        <strong>{plural(result.updates.length, 'newer release')}:</strong> {when}. Run <code>svc upgrade --apply</code> on the
        host to install a new svc, then restart it.
      </p>
      <ul>
        {result.updates.map((u) => (
          <li key={u.name}>
            <code>{u.name}</code> {u.installed} → <strong>{u.latest}</strong>
          </li>
        ))}
      </ul>
    </div>
  );
}

function VersionsSection() {
  const versions = useResource(() => api.get<Versions>('/admin/system/versions'), []);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<UpdateCheck | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const check = async () => {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      setResult(await api.post<UpdateCheck>('/admin/system/versions/check'));
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  const newer = new Map((result?.updates ?? []).map((u) => [u.name, u.latest]));
  return (
    <Section
      title="Versions"
      actions={
        <button type="button" class="secondary" disabled={busy} onClick={() => void check()}>
          {busy ? 'Checking…' : 'Check for updates'}
        </button>
      }
    >
      <UpdateCheckResult result={result} error={error} />
      <Loaded resource={versions}>
        {(v) => (
          <>
            <Facts
              items={[
                ['svc', v.version, 'versions-svc'],
                ['Build', <code>{v.build_commit}</code>],
                v.dashboard_commit !== v.build_commit && ['Dashboard build', <code>{v.dashboard_commit}</code>],
                ['Agent protocol', v.agent_protocol, 'versions-protocol'],
                ['Bun runtime', v.runtime.bun],
              ]}
            />
            <h3>Packages</h3>
            <Table columns={['Package', 'Installed', 'Newer release']}>
              {Object.entries(v.packages).map(([name, installed]) => (
                <tr key={name}>
                  <td>
                    <code>{name}</code>
                  </td>
                  <td>{installed}</td>
                  <td>{newer.has(name) ? <Badge tone="warn">{newer.get(name)!}</Badge> : <span class="muted">-</span>}</td>
                </tr>
              ))}
            </Table>
          </>
        )}
      </Loaded>
    </Section>
  );
}

export function SystemPage() {
  // Administrators only, as /users: the link is not shown to others and the address leads them back.
  if (me.value && !me.value.is_admin) return <Redirect to="/projects" />;
  return (
    <>
      <PageHeader
        title="System"
        lead={
          <>
            Whether every part of this svc process works, what it runs on, and which versions are installed. Readiness and the
            audit chain check are on the <a href="/health">Health</a> page.
          </>
        }
      />
      <div class="stack">
        <DeepHealth />
        <SystemFacts />
        <VersionsSection />
      </div>
    </>
  );
}
