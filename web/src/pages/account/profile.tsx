// /account: your name and time zone, your password, your projects, and how the dashboard looks here.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import { applyTheme, storedTheme, type Theme } from '../../lib/theme.ts';
import { me, refreshMe } from '../../session.ts';
import { Empty, PageHeader, Section } from '../../ui/bits.tsx';
import { Form, SelectField, TextField } from '../../ui/form.tsx';
import { NewPasswordField } from '../../ui/password.tsx';

function PasswordChange() {
  const [done, setDone] = useState(false);
  return (
    <Section title="Password">
      <Form
        submit="Change password"
        busyText="Changing…"
        resetOnSuccess
        onSubmit={async (v) => {
          setDone(false);
          if (v.new_password !== v.confirm) throw new Error('The two new passwords differ.');
          await api.post('/auth/change-password', { current_password: v.current_password, new_password: v.new_password });
          setDone(true);
        }}
      >
        <TextField label="Current password" name="current_password" type="password" autoComplete="current-password" required />
        <NewPasswordField label="New password" name="new_password" />
        <TextField label="Repeat the new password" name="confirm" type="password" autoComplete="new-password" required />
      </Form>
      {done && (
        <p class="notice ok" role="status">
          Password changed. Your other sessions and remembered devices were signed out.
        </p>
      )}
    </Section>
  );
}

export function ProfilePage() {
  const user = me.value!;
  const [saved, setSaved] = useState(false);
  const [theme, setTheme] = useState<Theme>(storedTheme());
  return (
    <>
      <PageHeader title="Your account" lead={user.email} />
      <div class="stack">
        <Section title="Profile">
          <Form
            submit="Save profile"
            busyText="Saving…"
            onSubmit={async (v) => {
              setSaved(false);
              await api.patch('/auth/me', {
                first_name: v.first_name ?? '',
                last_name: v.last_name ?? '',
                display_name: v.display_name ?? '',
                timezone: v.timezone?.trim() || 'UTC',
              });
              await refreshMe();
              setSaved(true);
            }}
          >
            <TextField
              label="First name"
              name="first_name"
              defaultValue={user.first_name}
              maxLength={100}
              autoComplete="given-name"
            />
            <TextField
              label="Last name"
              name="last_name"
              defaultValue={user.last_name}
              maxLength={100}
              autoComplete="family-name"
            />
            <TextField
              label="Display name"
              name="display_name"
              defaultValue={user.display_name}
              maxLength={200}
              autoComplete="nickname"
            />
            <TextField
              label="Time zone"
              name="timezone"
              defaultValue={user.timezone}
              maxLength={64}
              hint="An IANA name such as Europe/Berlin, or UTC."
            />
          </Form>
          {saved && (
            <p class="notice ok" role="status">
              Profile saved.
            </p>
          )}
        </Section>
        <PasswordChange />
        <Section title="Your projects">
          {user.memberships.length === 0 ? (
            <Empty
              title={
                user.is_admin ? 'No memberships: as an administrator you see every project.' : 'You are not in any project yet'
              }
            >
              {!user.is_admin && <p>A project admin can invite you; the link brings you straight in.</p>}
            </Empty>
          ) : (
            <ul class="plain">
              {user.memberships.map((m) => (
                <li key={m.project_id}>
                  <a href={`/projects/${m.project_slug}`}>{m.project_name}</a> <span class="muted">— {m.role}</span>
                </li>
              ))}
            </ul>
          )}
        </Section>
        <Section title="Appearance">
          <SelectField
            label="Theme"
            name="theme"
            value={theme}
            options={[
              { value: 'system', label: 'Same as the system' },
              { value: 'light', label: 'Light' },
              { value: 'dark', label: 'Dark' },
            ]}
            onChange={(value) => {
              setTheme(value as Theme);
              applyTheme(value as Theme);
            }}
          />
        </Section>
      </div>
    </>
  );
}
