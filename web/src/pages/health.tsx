// /health: is svc ready (the same check load balancers use), which version runs, and for administrators the
// server's versions, a button that walks the whole audit chain now and the way to /system (pages/system.tsx).
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../api/client.ts';
import type { AuditVerification, Unready, Versions } from '../api/types.ts';
import { plural } from '../lib/format.ts';
import { useResource } from '../lib/use-resource.ts';
import { me } from '../session.ts';
import { Badge, Loaded, PageHeader, Section, Time } from '../ui/bits.tsx';
import { ErrorNotice } from '../ui/errors.tsx';

declare const SVC_VERSION: string;

interface Readiness {
  ready: boolean;
  reason: string | null;
  checkedAt: string;
}

/** Readiness answers 503 with {status, reason} when not ready: that is a result here, not an error. */
async function readiness(): Promise<Readiness> {
  const checkedAt = new Date().toISOString();
  try {
    const res = await fetch('/api/v1/health/ready', { headers: { accept: 'application/json' } });
    const body = (await res.json().catch(() => ({}))) as Partial<Unready>;
    return { ready: res.ok, reason: res.ok ? null : (body.reason ?? `HTTP ${res.status}`), checkedAt };
  } catch {
    return { ready: false, reason: 'svc did not answer', checkedAt };
  }
}

function AuditVerify() {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<AuditVerification | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  return (
    <Section title="Audit log integrity">
      <p>
        Every privileged action is written to an HMAC-chained audit log. Verification walks the whole chain and reports any row
        that was changed, removed or inserted.
      </p>
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={async () => {
            setBusy(true);
            setError(null);
            try {
              setResult(await api.post<AuditVerification>('/admin/audit/verify'));
            } catch (e) {
              setError(asApiError(e));
            } finally {
              setBusy(false);
            }
          }}
        >
          {busy ? 'Verifying…' : 'Verify the audit chain'}
        </button>
      </div>
      <ErrorNotice error={error} />
      {result && (
        <div class={`notice ${result.clean ? 'ok' : 'error'}`} role="status" data-testid="audit-result">
          {result.clean ? (
            <p>
              <strong>The chain is intact.</strong> {plural(result.rows_verified, 'row')} verified in {result.duration_ms} ms
              {result.frozen_rows > 0 && ` (${plural(result.frozen_rows, 'frozen row')} kept from pruning)`}.
            </p>
          ) : (
            <>
              <p>
                <strong>The chain is broken.</strong> {plural(result.findings.length, 'finding')} after{' '}
                {plural(result.rows_verified, 'row')}
                {result.first_bad_row_id && (
                  <>
                    ; first bad row <code>{result.first_bad_row_id}</code>
                  </>
                )}
                . Run <code>svc audit verify</code> on the host for the full report.
              </p>
              <ul>
                {result.findings.slice(0, 20).map((f, n) => (
                  <li key={n}>
                    <code>{JSON.stringify(f)}</code>
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
    </Section>
  );
}

export function HealthPage() {
  const ready = useResource(readiness, []);
  const admin = me.value?.is_admin ?? false;
  const versions = useResource(() => (admin ? api.get<Versions>('/admin/system/versions') : Promise.resolve(null)), [admin]);
  return (
    <>
      <PageHeader title="Health" lead="Whether svc is ready to serve, and which version runs." />
      <div class="stack">
        <Section
          title="Readiness"
          actions={
            <button type="button" class="secondary" onClick={() => void ready.reload()} disabled={ready.loading}>
              Check again
            </button>
          }
        >
          <Loaded resource={ready}>
            {(r) => (
              <dl class="facts">
                <dt>Status</dt>
                <dd data-testid="readiness">
                  {r.ready ? <Badge tone="ok">ready</Badge> : <Badge tone="bad">not ready</Badge>}
                  {r.reason && <span> — {r.reason === 'database' ? 'the database does not answer' : r.reason}</span>}
                </dd>
                <dt>Checked</dt>
                <dd>
                  <Time iso={r.checkedAt} />
                </dd>
              </dl>
            )}
          </Loaded>
        </Section>
        <Section title="Version">
          <dl class="facts">
            <dt>Dashboard</dt>
            <dd data-testid="version">{SVC_VERSION}</dd>
            {admin && (
              <Loaded resource={versions}>
                {(v) =>
                  v && (
                    <>
                      <dt>Server</dt>
                      <dd>
                        {v.version} <span class="muted">(build {v.build_commit})</span>
                      </dd>
                      <dt>Agent protocol</dt>
                      <dd>{v.agent_protocol}</dd>
                      <dt>Bun runtime</dt>
                      <dd>{v.runtime.bun}</dd>
                    </>
                  )
                }
              </Loaded>
            )}
          </dl>
          {admin && (
            <p class="small">
              Every subsystem checked, the host and database, all package versions and the update check:{' '}
              <a href="/system">System</a>.
            </p>
          )}
        </Section>
        {admin && <AuditVerify />}
      </div>
    </>
  );
}
