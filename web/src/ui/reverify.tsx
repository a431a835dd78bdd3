// The server's "confirm it is you" step. 403 mfa_reverify_required: ask for the authenticator code, POST
// /auth/mfa/verify, and let the API client retry the refused request. 403 mfa_reverify_sso (the second factor
// was the identity provider's): offer to sign in there again, which leaves the page and comes back to it, the
// session's MFA fresh (or with ?sso_error= when the provider signed in someone else). Requests refused
// together share one prompt.
import { signal } from '@preact/signals';
import { api, type ApiError } from '../api/client.ts';
import { Dialog } from './dialog.tsx';
import { Form, TextField } from './form.tsx';

interface AtProvider {
  provider: string;
  loginUrl: string;
}

const pending = signal<{ promise: Promise<boolean>; resolve: (ok: boolean) => void; sso: AtProvider | null } | null>(null);

function atProvider(refusal: ApiError): AtProvider | null {
  const d = refusal.details as { provider?: unknown; login_url?: unknown };
  if (refusal.code !== 'mfa_reverify_sso' || typeof d.login_url !== 'string' || !d.login_url.startsWith('/api/')) return null;
  return { provider: typeof d.provider === 'string' ? d.provider : 'your identity provider', loginUrl: d.login_url };
}

export function askForMfaCode(refusal: ApiError): Promise<boolean> {
  if (pending.value) return pending.value.promise;
  let resolve!: (ok: boolean) => void;
  const promise = new Promise<boolean>((r) => (resolve = r));
  pending.value = { promise, resolve, sso: atProvider(refusal) };
  return promise;
}

function finish(ok: boolean): void {
  const p = pending.value;
  pending.value = null;
  p?.resolve(ok);
}

/** Back from a confirmation the provider refused: the page's address says so once. */
function takeReturnedError(): boolean {
  const url = new URL(location.href);
  if (url.searchParams.get('sso_error') !== 'sso_reverify_refused') return false;
  url.searchParams.delete('sso_error');
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
  return true;
}
const refusedOnReturn = signal(takeReturnedError());

function AtProviderStep(props: { sso: AtProvider }) {
  const back = encodeURIComponent(`${location.pathname}${location.search}`);
  return (
    <>
      <p>
        This action needs a fresh two-factor check. You signed in through {props.sso.provider}, so confirm it there: sign in
        again, and you come back to this page. Then repeat the action.
      </p>
      <div class="actions">
        <a class="button" href={`${props.sso.loginUrl}&next=${back}`} target="_top">
          {`Verify with ${props.sso.provider}`}
        </a>
        <button type="button" class="secondary" onClick={() => finish(false)}>
          Cancel
        </button>
      </div>
    </>
  );
}

export function ReverifyDialog() {
  const sso = pending.value?.sso ?? null;
  return (
    <>
      <Dialog open={pending.value !== null} title="Confirm it is you" onClose={() => finish(false)}>
        {sso ? (
          <AtProviderStep sso={sso} />
        ) : (
          <>
            <p>This action needs a fresh two-factor check. Enter the 6-digit code from your authenticator app, or a recovery code.</p>
            <Form
              submit="Confirm"
              busyText="Checking…"
              onSubmit={async (v) => {
                await api.post('/auth/mfa/verify', { code: (v.code ?? '').trim() });
                finish(true);
              }}
              actions={
                <button type="button" class="secondary" onClick={() => finish(false)}>
                  Cancel
                </button>
              }
            >
              <TextField label="Authenticator code" name="code" autoComplete="one-time-code" inputMode="numeric" required autoFocus />
            </Form>
          </>
        )}
      </Dialog>
      <Dialog open={refusedOnReturn.value} title="Not confirmed" onClose={() => (refusedOnReturn.value = false)}>
        <p role="alert">
          Your identity provider did not confirm it was you: it signed in another account, or without a second factor. Nothing
          was changed, and you are still signed in.
        </p>
        <div class="actions">
          <button type="button" onClick={() => (refusedOnReturn.value = false)}>
            Close
          </button>
        </div>
      </Dialog>
    </>
  );
}
