// Sign in: password first; when the account has two-factor authentication and this browser is not remembered,
// the authenticator step (/login/mfa) follows.
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api } from '../api/client.ts';
import type { User } from '../api/types.ts';
import { loadSession, loginNotice, me, safeNext, signOut } from '../session.ts';
import { CheckboxField, Form, TextField } from '../ui/form.tsx';
import { Redirect } from '../ui/link.tsx';

export function AuthCard(props: { title: string; lead?: ComponentChildren; children: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · svc`;
  }, [props.title]);
  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <p class="brand">svc</p>
        <h1>{props.title}</h1>
        {props.lead && <p class="lead">{props.lead}</p>}
        {props.children}
      </div>
    </main>
  );
}

function Notice() {
  const text = loginNotice.value;
  return text ? (
    <p class="notice info" role="status">
      {text}
    </p>
  ) : null;
}

export function LoginPage() {
  const { query, route } = useLocation();
  const next = safeNext(query.next);
  if (me.value) return <Redirect to={next} />;
  return (
    <AuthCard title="Sign in">
      <Notice />
      <Form
        submit="Sign in"
        busyText="Signing in…"
        label="Sign in"
        onSubmit={async (v) => {
          const r = await api.post<{ user: User; mfa_required: boolean }>(
            '/auth/login',
            { email: v.email, password: v.password, remember_me: v.remember_me === 'on' },
            { anonymous: true },
          );
          loginNotice.value = null;
          if (r.mfa_required) {
            route(`/login/mfa?next=${encodeURIComponent(next)}`);
            return;
          }
          await loadSession();
          route(next, true);
        }}
      >
        <TextField label="E-mail address" name="email" type="email" autoComplete="username" required autoFocus />
        <TextField label="Password" name="password" type="password" autoComplete="current-password" required />
        <CheckboxField label="Keep me signed in on this browser" name="remember_me" />
      </Form>
      <p class="hint">
        Forgot your password? An administrator can set a new one, or run <code>svc changepassword &lt;email&gt;</code> on the
        host.
      </p>
    </AuthCard>
  );
}

export function LoginMfaPage() {
  const { query, route } = useLocation();
  const next = safeNext(query.next);
  if (me.value) return <Redirect to={next} />;
  return (
    <AuthCard
      title="Two-factor authentication"
      lead="Enter the 6-digit code from your authenticator app. Lost it? Use one of your recovery codes."
    >
      <Form
        submit="Verify"
        busyText="Checking…"
        label="Two-factor step"
        onSubmit={async (v) => {
          try {
            await api.post(
              '/auth/mfa/verify',
              { code: (v.code ?? '').trim(), remember_device: v.remember_device === 'on' },
              { anonymous: true },
            );
          } catch (e) {
            // No password step behind this browser (expired, or opened directly): start from the beginning.
            if (e instanceof ApiError && e.code === 'unauthenticated') {
              loginNotice.value = 'Sign in with your password first.';
              route(`/login?next=${encodeURIComponent(next)}`, true);
              return;
            }
            throw e;
          }
          await loadSession();
          route(next, true);
        }}
      >
        <TextField
          label="Authenticator code"
          name="code"
          hint="Or one of your recovery codes."
          autoComplete="one-time-code"
          inputMode="numeric"
          required
          autoFocus
        />
        <CheckboxField label="Remember this device (skip this step here for a while)" name="remember_device" />
      </Form>
      <p>
        <button type="button" class="link" onClick={() => void signOut()}>
          Use another account
        </button>
      </p>
    </AuthCard>
  );
}
