// Server errors as sentences a person can act on: the envelope's message, the field messages no input shows
// next to itself, and a way forward for the errors that have one.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiError } from '../api/client.ts';
import { sentence } from '../lib/format.ts';

/** The form's last error, and the paths (`/password`) of its inputs, which show their own messages. */
export interface FormState {
  error: ApiError | null;
  shown: Set<string>;
}
export const FormContext = createContext<FormState | null>(null);

const label = (path: string) => sentence(path.replace(/^\//, '').replace(/[/_]/g, ' ') || 'request');

function hint(error: ApiError) {
  switch (error.code) {
    case 'mfa_enrollment_required':
      return (
        <p>
          <a href="/account/security">Set up two-factor authentication</a>, then try again.
        </p>
      );
    case 'mfa_reverify_required':
      return <p>The authenticator code was not confirmed, so nothing was changed.</p>;
    case 'insufficient_role': {
      const d = error.details as { have?: string; need?: string };
      return d.need ? <p>{`Your role here is ${d.have ?? 'none'}; this needs ${d.need}. Ask a project admin.`}</p> : null;
    }
    case 'rate_limited': {
      const s = Number((error.details as { retry_after_seconds?: number }).retry_after_seconds);
      return Number.isFinite(s) ? <p>{`Try again in ${s} seconds.`}</p> : null;
    }
    default:
      return null;
  }
}

export function ErrorNotice(props: { error: ApiError | null; title?: string }) {
  const form = useContext(FormContext);
  const error = props.error;
  if (!error) return null;
  // Shown by an input: its own path, or one below an input that shows what is below it (`/config/headers/`).
  const shownByInput = (path: string) =>
    !!form && (form.shown.has(path) || [...form.shown].some((s) => s.endsWith('/') && path.startsWith(s)));
  const fields = error.fields.filter((f) => !shownByInput(f.path));
  return (
    <div class="notice error" role="alert">
      <p>
        {props.title ? <strong>{props.title}: </strong> : null}
        {sentence(error.message)}
        {error.message.endsWith('.') ? '' : '.'}
      </p>
      {fields.length > 0 && (
        <ul>
          {fields.map((f) => (
            <li key={f.path}>{`${label(f.path)}: ${f.message}`}</li>
          ))}
        </ul>
      )}
      {hint(error)}
    </div>
  );
}
