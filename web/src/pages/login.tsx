// Sign in: password first; when the account has two-factor authentication and this browser is not remembered,
// the authenticator step (/login/mfa) follows.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ApiError, api } from '../api/client.ts';
import type { LoginAnswer, SsoConfig } from '../api/types.ts';
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

/** Why single sign-on sent the browser back here (`?sso_error=` from the callback), in words. */
const SSO_ERRORS: Record<string, string> = {
  sso_no_account: 'Your identity provider signed you in, but no svc account has that e-mail address. Ask an administrator to invite you.',
  sso_account_inactive: 'Your svc account is deactivated. Ask an administrator.',
  sso_email_unverified: 'Your identity provider has not verified your e-mail address, so svc cannot match it to an account.',
  sso_denied: 'The identity provider did not sign you in.',
  sso_provider_error: 'svc could not reach the identity provider. Try again, or tell an administrator.',
  proxy_not_trusted: 'Sign-in through the proxy is only possible from the configured proxy.',
};
const ssoErrorText = (code: string) =>
  SSO_ERRORS[code] ?? 'Single sign-on did not work this time (it may have taken too long, or been opened twice). Try again.';

/** The single sign-on choices the server offers (GET /auth/sso/config), above the password form. */
function SingleSignOn(props: { next: string }) {
  const [config, setConfig] = useState<SsoConfig | null>(null);
  useEffect(() => {
    api
      .get<SsoConfig>('/auth/sso/config', undefined, { anonymous: true })
      .then(setConfig)
      .catch(() => {});
  }, []);
  if (!config || (!config.oidc.enabled && !config.proxy.enabled)) return null;
  const next = encodeURIComponent(props.next);
  const wide = { display: 'block', textAlign: 'center', marginBottom: '0.75rem' };
  // target=_top: a real navigation (the router would keep an /api/ link inside the dashboard).
  return (
    <div class="sso" data-testid="sso">
      {config.oidc.enabled && (
        <a class="button secondary" style={wide} href={`/api/v1/auth/sso/login?next=${next}`} target="_top" data-testid="sso-login">
          {config.oidc.label}
        </a>
      )}
      {config.proxy.enabled && (
        <a class="button secondary" style={wide} href={`/api/v1/auth/proxy/login?next=${next}`} target="_top" data-testid="proxy-login">
          Continue with your organisation's sign-in
        </a>
      )}
      <p class="hint">
        {config.password_login.break_glass_only ? 'Password sign-in is kept for the emergency administrator only:' : 'Or with your password:'}
      </p>
    </div>
  );
}

export function LoginPage() {
  const { query, route } = useLocation();
  const next = safeNext(query.next);
  if (me.value) return <Redirect to={next} />;
  return (
    <AuthCard title="Sign in">
      <Notice />
      {query.sso_error && (
        <p class="notice error" role="alert" data-testid="sso-error">
          {ssoErrorText(query.sso_error)}
        </p>
      )}
      <SingleSignOn next={next} />
      <Form
        submit="Sign in"
        busyText="Signing in…"
        label="Sign in"
        onSubmit={async (v) => {
          const r = await api.post<LoginAnswer>(
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
