// /invite#token=…: the link an invitation hands out. The token stays in the fragment (never sent in a request
// line or a Referer); the page previews the invitation and accepts it, creating the account or joining with the
// signed-in one.
import { useLocation } from 'preact-iso';
import { api } from '../api/client.ts';
import type { InvitationAccepted, InvitationPreview } from '../api/types.ts';
import { useResource } from '../lib/use-resource.ts';
import { loadSession, me, signOut } from '../session.ts';
import { Loaded, Time } from '../ui/bits.tsx';
import { ErrorNotice } from '../ui/errors.tsx';
import { Form, TextField } from '../ui/form.tsx';
import { NewPasswordField } from '../ui/password.tsx';
import { AuthCard } from './login.tsx';

/** Kept for the round trip through the login page, so the token never lands in a query string. */
const KEPT = 'svc.invite';

function tokenFromUrl(): string {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  return hash.get('token') ?? new URLSearchParams(location.search).get('token') ?? sessionStorage.getItem(KEPT) ?? '';
}

export function InvitePage() {
  const { route } = useLocation();
  const token = tokenFromUrl();
  const preview = useResource(
    () =>
      token
        ? api.get<InvitationPreview>('/invitations/preview', { token }, { anonymous: true })
        : Promise.reject(new Error('no token')),
    [token],
  );
  if (!token) {
    return (
      <AuthCard title="Invitation">
        <p class="notice error" role="alert">
          This page needs the whole invitation link (it ends in <code>#token=…</code>). Ask whoever invited you to send it again.
        </p>
      </AuthCard>
    );
  }
  const accepted = async (body: object) => {
    const r = await api.post<InvitationAccepted>(
      '/invitations/accept',
      { token, ...body },
      { anonymous: true },
    );
    history.replaceState(null, '', '/invite'); // the token is spent: keep it out of the history
    sessionStorage.removeItem(KEPT);
    await loadSession();
    route(`/projects/${r.project_slug}`, true);
  };
  return (
    <AuthCard title="You are invited">
      {preview.error ? (
        <>
          <ErrorNotice error={preview.error} />
          <p>The invitation may have expired, been revoked or been used already. Ask a project admin for a new one.</p>
        </>
      ) : (
        <Loaded resource={preview}>
          {(p) => {
            const signedIn = me.value;
            return (
              <>
                <p class="lead">
                  Join <strong>{p.project_name}</strong> as <strong>{p.role}</strong>. The invitation is for{' '}
                  <strong>{p.email}</strong> and expires <Time iso={p.expires_at} />.
                </p>
                {signedIn && signedIn.email === p.email ? (
                  <Form submit={`Join ${p.project_name}`} onSubmit={() => accepted({})} />
                ) : (
                  <>
                    {signedIn && (
                      <p class="notice info">
                        You are signed in as {signedIn.email}. Creating the invited account signs you in as {p.email} instead.{' '}
                        <button type="button" class="link" onClick={() => void signOut()}>
                          Sign out
                        </button>
                      </p>
                    )}
                    <p>
                      Already have an account for {p.email}?{' '}
                      <a href="/login?next=/invite" onClick={() => sessionStorage.setItem(KEPT, token)}>
                        Sign in
                      </a>{' '}
                      first. Otherwise, create it here:
                    </p>
                    <Form
                      submit="Create account and join"
                      busyText="Creating…"
                      onSubmit={async (v) => {
                        if (v.password !== v.confirm) throw new Error('The two passwords differ.');
                        await accepted({ password: v.password, display_name: v.display_name?.trim() || undefined });
                      }}
                    >
                      <TextField label="Your name" name="display_name" autoComplete="name" maxLength={200} />
                      <NewPasswordField name="password" />
                      <TextField
                        label="Repeat the password"
                        name="confirm"
                        type="password"
                        autoComplete="new-password"
                        required
                      />
                    </Form>
                  </>
                )}
              </>
            );
          }}
        </Loaded>
      )}
    </AuthCard>
  );
}
