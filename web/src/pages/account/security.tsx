// /account/security: two-factor authentication (enrolment with a QR code drawn here, recovery codes shown once,
// regeneration, turning it off), the devices that skip the code at sign-in, and the sessions signed in as you.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { LinkedIdentities, MfaStatus, RecoveryCodes, Session, TrustedDevice } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { useResource } from '../../lib/use-resource.ts';
import { refreshMe, signOut } from '../../session.ts';
import { Badge, ConfirmButton, Empty, Loaded, PageHeader, Section, Time } from '../../ui/bits.tsx';
import { ListTable } from '../../ui/table.tsx';
import { CopyButton, DownloadLink } from '../../ui/copy.tsx';
import { Form, TextField } from '../../ui/form.tsx';
import { FormDialog } from '../../ui/form-dialog.tsx';
import { QrCode } from '../../ui/qr.tsx';

function RecoveryCodes(props: { codes: string[]; onDone: () => void }) {
  const text = `svc recovery codes (each works once)\n\n${props.codes.join('\n')}\n`;
  return (
    <div class="secret" data-testid="recovery-codes">
      <p class="warn">
        <strong>Your recovery codes</strong> — each signs you in once if you lose your authenticator. Store them somewhere safe
        now: they are not shown again.
      </p>
      <ol class="codes">
        {props.codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <div class="actions">
        <CopyButton text={text} label="Copy all" />
        <DownloadLink text={text} filename="svc-recovery-codes.txt" label="Download" />
        <button type="button" class="primary" onClick={props.onDone}>
          I have saved them
        </button>
      </div>
    </div>
  );
}

function Enrolment(props: { onEnrolled: (codes: string[]) => void }) {
  const [started, setStarted] = useState<{ secret_base32: string; provisioning_url: string } | null>(null);
  if (!started) {
    return (
      <Form
        submit="Set up two-factor authentication"
        busyText="Starting…"
        onSubmit={async () => setStarted(await api.post('/auth/mfa/enroll-start'))}
      >
        <p>
          Two-factor authentication asks for a code from an authenticator app (such as Aegis, Google Authenticator or 1Password)
          when you sign in. Administrators need it to manage users, keys and projects.
        </p>
      </Form>
    );
  }
  return (
    <div class="enrol">
      <ol class="steps">
        <li>Scan this code with your authenticator app.</li>
        <li>
          Or type the key by hand: <code data-testid="totp-secret">{started.secret_base32}</code>{' '}
          <CopyButton text={started.secret_base32} label="Copy key" />
        </li>
        <li>Enter the 6-digit code the app shows to finish.</li>
      </ol>
      <QrCode text={started.provisioning_url} label="QR code for your authenticator app" />
      <Form
        submit="Turn on two-factor authentication"
        busyText="Checking…"
        onSubmit={async (v) => {
          const r = await api.post<RecoveryCodes>('/auth/mfa/enroll-complete', { code: (v.code ?? '').trim() });
          props.onEnrolled(r.recovery_codes);
        }}
      >
        <TextField label="Code from the app" name="code" autoComplete="one-time-code" inputMode="numeric" required />
      </Form>
    </div>
  );
}

function TwoFactor() {
  const status = useResource(() => api.get<MfaStatus>('/auth/mfa/status'), []);
  const [codes, setCodes] = useState<string[] | null>(null);
  const changed = async (newCodes: string[] | null) => {
    setCodes(newCodes);
    await Promise.all([status.reload(), refreshMe()]);
  };
  return (
    <Section title="Two-factor authentication">
      {codes ? (
        <RecoveryCodes codes={codes} onDone={() => setCodes(null)} />
      ) : (
        <Loaded resource={status}>
          {(s) =>
            !s.enrolled ? (
              <Enrolment onEnrolled={(c) => void changed(c)} />
            ) : (
              <>
                <p>
                  <Badge tone="ok">on</Badge> since <Time iso={s.enrolled_at} />.{' '}
                  {plural(s.remaining_recovery_codes, 'unused recovery code')}
                  {s.remaining_recovery_codes < 3 && ': make new ones soon'}.
                </p>
                <div class="actions">
                  <ConfirmButton
                    label="Make new recovery codes"
                    title="Make new recovery codes?"
                    confirm="Make new codes"
                    onConfirm={async () =>
                      changed(
                        (await api.post<RecoveryCodes>('/auth/mfa/recovery-codes/regenerate')).recovery_codes,
                      )
                    }
                  >
                    <p>Your current recovery codes stop working.</p>
                  </ConfirmButton>
                  <FormDialog
                    button="Turn off"
                    buttonClass="danger"
                    title="Turn off two-factor authentication"
                    submit="Turn off"
                    onSubmit={async (v) => {
                      await api.post('/auth/mfa/disable', { password: v.password, code: (v.code ?? '').trim() });
                      await changed(null);
                    }}
                  >
                    <p>Signing in then needs only your password, and you can no longer manage users, keys or projects.</p>
                    <TextField label="Password" name="password" type="password" autoComplete="current-password" required />
                    <TextField label="Authenticator code" name="code" autoComplete="one-time-code" inputMode="numeric" required />
                  </FormDialog>
                </div>
              </>
            )
          }
        </Loaded>
      )}
    </Section>
  );
}

function Devices() {
  const devices = useResource(() => api.get<TrustedDevice[]>('/auth/mfa/trusted-devices'), []);
  return (
    <Section title="Remembered devices">
      <p>Browsers where you ticked “Remember this device” skip the code at sign-in until they expire.</p>
      <ListTable
        resource={devices}
        columns={['Device', 'Added', 'Last used', 'Status', 'Actions']}
        empty={
          <Empty title="No remembered devices">
            <p>Tick “Remember this device” at the two-factor step to add one.</p>
          </Empty>
        }
        row={(d) => (
          <tr key={d.id}>
            <td>{d.label}</td>
            <td>
              <Time iso={d.created_at} />
            </td>
            <td>
              <Time iso={d.last_seen_at} />
            </td>
            <td>
              {d.active ? (
                <>
                  <Badge tone="ok">active</Badge>{' '}
                  <span class="muted small">
                    until <Time iso={d.expires_at} />
                  </span>
                </>
              ) : (
                <Badge>{d.revoked_at ? 'forgotten' : 'expired'}</Badge>
              )}
            </td>
            <td>
              {d.active && (
                <ConfirmButton
                  label="Forget"
                  what={d.label}
                  confirm="Forget device"
                  danger
                  small
                  onConfirm={async () => {
                    await api.post(`/auth/mfa/trusted-devices/${d.id}/revoke`);
                    await devices.reload();
                  }}
                >
                  <p>It asks for the code again at its next sign-in.</p>
                </ConfirmButton>
              )}
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

/** Identities at the identity provider that sign you in (linked at your first SSO sign-in), with unlink. */
function SingleSignOn() {
  const linked = useResource(() => api.get<LinkedIdentities>('/auth/sso/identities'), []);
  const list = linked.data;
  if (!list || (list.identities.length === 0 && linked.error === null)) return null;
  const last = list.identities.length === 1 && !list.password_sign_in;
  return (
    <Section title="Single sign-on">
      <p>
        These identities sign you in through your organisation's identity provider.
        {last && ' It is your only way to sign in, so it cannot be unlinked.'}
      </p>
      <ListTable
        resource={{ ...linked, data: list.identities }}
        columns={['Provider', 'Identity', 'Linked', 'Last sign-in', 'Actions']}
        row={(i) => (
          <tr key={i.id} data-testid="sso-identity">
            <td>
              <code>{i.issuer}</code>
            </td>
            <td>
              {i.email} <span class="muted small">({i.subject})</span>
            </td>
            <td>
              <Time iso={i.created_at} />
            </td>
            <td>
              <Time iso={i.last_login_at} />
            </td>
            <td>
              {!last && (
                <ConfirmButton
                  label="Unlink"
                  what={`${i.email} at ${i.issuer}`}
                  title="Unlink this identity?"
                  confirm="Unlink"
                  danger
                  small
                  onConfirm={async () => {
                    await api.del(`/auth/sso/identities/${i.id}`);
                    await linked.reload();
                  }}
                >
                  <p>Signing in with it links it again while its e-mail address matches your account.</p>
                </ConfirmButton>
              )}
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

function Sessions() {
  const sessions = useResource(() => api.get<Session[]>('/auth/sessions'), []);
  return (
    <Section title="Sessions">
      <p>Every browser signed in as you. Sign out one you do not recognise, then change your password.</p>
      <ListTable
        resource={sessions}
        columns={['Browser', 'Address', 'Signed in', 'Last active', 'Actions']}
        row={(s) => (
          <tr key={s.id} data-current={s.is_current || undefined}>
            <td>
              <span class="ua" title={s.user_agent ?? ''}>
                {s.user_agent ?? 'unknown'}
              </span>{' '}
              {s.is_current && <Badge tone="info">this browser</Badge>}
            </td>
            <td>{s.ip ?? '—'}</td>
            <td>
              <Time iso={s.issued_at} />
            </td>
            <td>
              <Time iso={s.last_seen_at} />
            </td>
            <td>
              {s.is_current ? (
                <button type="button" class="secondary small" onClick={() => void signOut()}>
                  Sign out
                </button>
              ) : (
                <ConfirmButton
                  label="Sign out"
                  what={`the session from ${s.ip ?? 'an unknown address'} signed in ${s.issued_at}`}
                  title="Sign out this session?"
                  confirm="Sign it out"
                  danger
                  small
                  onConfirm={async () => {
                    await api.post(`/auth/sessions/${s.id}/revoke`);
                    await sessions.reload();
                  }}
                >
                  <p>That browser is sent back to the sign-in page at its next request.</p>
                </ConfirmButton>
              )}
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

export function SecurityPage() {
  return (
    <>
      <PageHeader title="Security" lead="Two-factor authentication, remembered devices and sessions." />
      <div class="stack">
        <TwoFactor />
        <SingleSignOn />
        <Devices />
        <Sessions />
      </div>
    </>
  );
}
