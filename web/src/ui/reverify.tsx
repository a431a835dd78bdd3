// The server's "confirm it is you" step (403 mfa_reverify_required): ask for the authenticator code, POST
// /auth/mfa/verify, and let the API client retry the refused request. Requests refused together share one prompt.
import { signal } from '@preact/signals';
import { api } from '../api/client.ts';
import { Dialog } from './dialog.tsx';
import { Form, TextField } from './form.tsx';

const pending = signal<{ promise: Promise<boolean>; resolve: (ok: boolean) => void } | null>(null);

export function askForMfaCode(): Promise<boolean> {
  if (pending.value) return pending.value.promise;
  let resolve!: (ok: boolean) => void;
  const promise = new Promise<boolean>((r) => (resolve = r));
  pending.value = { promise, resolve };
  return promise;
}

function finish(ok: boolean): void {
  const p = pending.value;
  pending.value = null;
  p?.resolve(ok);
}

export function ReverifyDialog() {
  return (
    <Dialog open={pending.value !== null} title="Confirm it is you" onClose={() => finish(false)}>
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
    </Dialog>
  );
}
