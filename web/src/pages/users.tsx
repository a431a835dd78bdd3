// /users (global administrators): every account; create, edit, deactivate, reset a password, delete. The
// server asks for a fresh two-factor check on each change, and the API client prompts for it.
import { useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { User } from '../api/types.ts';
import { useResource } from '../lib/use-resource.ts';
import { me } from '../session.ts';
import { Badge, ConfirmButton, Empty, PageHeader, Section, Time } from '../ui/bits.tsx';
import { ListTable } from '../ui/table.tsx';
import { CheckboxField, TextField, present } from '../ui/form.tsx';
import { FormDialog } from '../ui/form-dialog.tsx';
import { NewPasswordField } from '../ui/password.tsx';
import { Redirect } from '../ui/link.tsx';

const PAGE = 100;

function UserRow(props: { user: User; reload: () => Promise<void> }) {
  const u = props.user;
  const self = u.id === me.value?.id;
  const patch = async (body: object) => {
    await api.patch(`/users/${u.id}`, body);
    await props.reload();
  };
  return (
    <tr>
      <td>
        {u.display_name}
        {self && <span class="muted"> (you)</span>}
      </td>
      <td>{u.email}</td>
      <td>
        {u.is_admin && <Badge tone="info">admin</Badge>}{' '}
        {u.is_active ? <Badge tone="ok">active</Badge> : <Badge tone="warn">deactivated</Badge>}
      </td>
      <td>
        <Time iso={u.last_login_at} />
      </td>
      <td class="row-actions">
        <FormDialog
          button="Edit"
          ariaLabel={`Edit ${u.email}`}
          title={`Edit ${u.email}`}
          submit="Save"
          onSubmit={(v) =>
            patch({
              first_name: v.first_name ?? '',
              last_name: v.last_name ?? '',
              display_name: v.display_name ?? '',
              timezone: v.timezone?.trim() || 'UTC',
              // Your own admin role is not yours to drop (the server refuses self-demotion).
              ...(self ? {} : { is_admin: v.is_admin === 'on' }),
            })
          }
        >
          <TextField label="First name" name="first_name" defaultValue={u.first_name} maxLength={100} />
          <TextField label="Last name" name="last_name" defaultValue={u.last_name} maxLength={100} />
          <TextField label="Display name" name="display_name" defaultValue={u.display_name} maxLength={200} />
          <TextField
            label="Time zone"
            name="timezone"
            defaultValue={u.timezone}
            maxLength={64}
            hint="An IANA name such as Europe/Berlin, or UTC."
          />
          {!self && <CheckboxField label="Administrator (manages users, projects and settings)" name="is_admin" checked={u.is_admin} />}
        </FormDialog>
        {self ? (
          // The server refuses self-deactivation and self-deletion; your password changes under Security.
          <a class="small" href="/account/security">
            Change your password
          </a>
        ) : (
          <OtherUserActions user={u} patch={patch} reload={props.reload} />
        )}
      </td>
    </tr>
  );
}

/** Password reset, deactivation and deletion: offered for other users only. */
function OtherUserActions(props: { user: User; patch: (body: object) => Promise<void>; reload: () => Promise<void> }) {
  const { user: u, patch } = props;
  return (
    <>
        <FormDialog
          button="Reset password"
          ariaLabel={`Reset the password of ${u.email}`}
          title={`New password for ${u.email}`}
          submit="Set password"
          onSubmit={async (v) => {
            await api.post(`/users/${u.id}/password`, { new_password: v.new_password });
          }}
        >
          <p>Their sessions and remembered devices end; tell them the new password another way.</p>
          <NewPasswordField label="New password" name="new_password" />
        </FormDialog>
        {u.is_active ? (
          <ConfirmButton
            label="Deactivate"
            what={u.email}
            confirm="Deactivate"
            danger
            small
            onConfirm={() => patch({ is_active: false })}
          >
            <p>They are signed out everywhere and cannot sign in until reactivated. Their API keys stop working.</p>
          </ConfirmButton>
        ) : (
          <ConfirmButton
            label="Reactivate"
            what={u.email}
            confirm="Reactivate"
            small
            onConfirm={() => patch({ is_active: true })}
          >
            <p>They can sign in again with their password.</p>
          </ConfirmButton>
        )}
        <ConfirmButton
          label="Delete"
          what={u.email}
          title={`Delete ${u.email} for good?`}
          confirm="Delete user"
          danger
          small
          onConfirm={async () => {
            await api.del(`/users/${u.id}`);
            await props.reload();
          }}
        >
          <p>
            Their sessions, memberships, API keys and two-factor data are removed. The audit log keeps what they did, without
            their name.
          </p>
        </ConfirmButton>
    </>
  );
}

export function UsersPage() {
  const [offset, setOffset] = useState(0);
  const list = useResource(() => api.get<User[]>('/users', { limit: PAGE, offset }), [offset]);
  if (me.value && !me.value.is_admin) return <Redirect to="/projects" />;
  return (
    <>
      <PageHeader
        title="Users"
        lead="Everyone who can sign in. Project access comes from memberships; administrators see every project."
        actions={
          <FormDialog
            button="New user"
            buttonClass="primary"
            title="New user"
            submit="Create user"
            onSubmit={async (v) => {
              await api.post<User>('/users', {
                email: v.email?.trim(),
                password: v.password,
                is_admin: v.is_admin === 'on',
                ...present(v, 'display_name'),
              });
              await list.reload();
            }}
          >
            <TextField label="E-mail address" name="email" type="email" required autoFocus />
            <TextField label="Display name" name="display_name" maxLength={200} />
            <NewPasswordField name="password" />
            <CheckboxField label="Administrator" name="is_admin" />
          </FormDialog>
        }
      />
      <Section title="All users">
        <ListTable
          resource={list}
          columns={['Name', 'E-mail', 'Status', 'Last sign-in', 'Actions']}
          empty={<Empty title="No users on this page" />}
          row={(u) => <UserRow key={u.id} user={u} reload={list.reload} />}
        />
        {(offset > 0 || (list.data?.length ?? 0) === PAGE) && (
          <div class="actions">
            <button type="button" class="secondary" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
              Previous page
            </button>
            <button
              type="button"
              class="secondary"
              disabled={(list.data?.length ?? 0) < PAGE}
              onClick={() => setOffset(offset + PAGE)}
            >
              Next page
            </button>
          </div>
        )}
      </Section>
    </>
  );
}
