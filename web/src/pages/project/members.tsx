// /projects/:slug/members: who is in the project with which role, adding existing users (administrators),
// and invitations: create (the link is shown once), list the pending ones, revoke.
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import { ROLES, type Invitation, type InvitationMinted, type Membership, type Role, type User } from '../../api/types.ts';
import { useResource } from '../../lib/use-resource.ts';
import { me } from '../../session.ts';
import { ConfirmButton, Empty, Loaded, Section, Time } from '../../ui/bits.tsx';
import { ListTable } from '../../ui/table.tsx';
import { SecretOnce } from '../../ui/copy.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { Form, SelectField, TextField } from '../../ui/form.tsx';
import type { ProjectPageProps } from './sections.ts';

function RoleSelect(props: { member: Membership; base: string; onChanged: () => Promise<void> }) {
  const [error, setError] = useState<ApiError | null>(null);
  return (
    <>
      <select
        aria-label={`Role of ${props.member.user_email}`}
        onChange={async (e) => {
          const select = e.currentTarget as HTMLSelectElement;
          setError(null);
          try {
            await api.patch(`${props.base}/memberships/${props.member.id}`, { role: select.value });
            await props.onChanged();
          } catch (err) {
            select.value = props.member.role;
            setError(asApiError(err));
          }
        }}
      >
        {ROLES.map((r) => (
          <option key={r} value={r} selected={r === props.member.role}>
            {r}
          </option>
        ))}
      </select>
      <ErrorNotice error={error} />
    </>
  );
}

function AddMember(props: { base: string; members: Membership[]; onAdded: () => Promise<void> }) {
  const users = useResource(() => api.get<User[]>('/users', { limit: 500 }), []);
  return (
    <Loaded resource={users}>
      {(all) => {
        const taken = new Set(props.members.map((m) => m.user_id));
        const candidates = all.filter((u) => u.is_active && !taken.has(u.id));
        if (candidates.length === 0) return <p class="muted">Every active user is already a member. Invite someone new below.</p>;
        return (
          <Form
            class="form inline-form"
            submit="Add member"
            label="Add an existing user"
            onSubmit={async (v) => {
              await api.post(`${props.base}/memberships`, { user_id: v.user_id, role: v.role });
              await props.onAdded();
            }}
          >
            <SelectField
              label="User"
              name="user_id"
              options={candidates.map((u) => ({ value: u.id, label: `${u.display_name} <${u.email}>` }))}
            />
            <SelectField label="Role" name="role" options={ROLES} value="viewer" />
          </Form>
        );
      }}
    </Loaded>
  );
}

function Invitations(props: { base: string }) {
  const pending = useResource(() => api.get<Invitation[]>(`${props.base}/invitations`), [props.base]);
  const [link, setLink] = useState<{ email: string; url: string } | null>(null);
  return (
    <Section title="Invitations">
      <p>An invitation is a link for one e-mail address. Whoever opens it sets a password and joins with the role you pick.</p>
      <Form
        class="form inline-form"
        submit="Create invitation"
        label="Invite someone"
        resetOnSuccess
        onSubmit={async (v) => {
          const r = await api.post<InvitationMinted>(`${props.base}/invitations`, {
            email: v.email?.trim(),
            role: v.role as Role,
            ttl_days: Number(v.ttl_days) || 7,
          });
          setLink({ email: r.invitation.email, url: `${location.origin}${r.accept_url_path}` });
          await pending.reload();
        }}
      >
        <TextField label="E-mail address" name="email" type="email" required />
        <SelectField label="Role" name="role" options={ROLES} value="viewer" />
        <TextField label="Valid for (days)" name="ttl_days" type="number" min={1} max={30} defaultValue="7" />
      </Form>
      {link && (
        <SecretOnce
          label={`Invitation link for ${link.email}`}
          value={link.url}
          testId="invitation-link"
          note="send it to them yourself (svc sends no e-mail); it is shown only now."
        />
      )}
      <h3>Pending</h3>
      <ListTable
        resource={pending}
        columns={['E-mail', 'Role', 'Sent', 'Expires', 'Actions']}
        empty={<Empty title="No pending invitations" />}
        row={(i) => (
          <tr key={i.id}>
            <td>{i.email}</td>
            <td>{i.role}</td>
            <td>
              <Time iso={i.created_at} />
            </td>
            <td>
              <Time iso={i.expires_at} />
            </td>
            <td>
              <ConfirmButton
                label="Revoke"
                what={`the invitation for ${i.email}`}
                confirm="Revoke"
                danger
                small
                onConfirm={async () => {
                  await api.del(`${props.base}/invitations/${i.id}`);
                  await pending.reload();
                }}
              >
                <p>The link stops working at once.</p>
              </ConfirmButton>
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

export function ProjectMembers({ project }: ProjectPageProps) {
  const base = `/projects/${encodeURIComponent(project.slug)}`;
  const members = useResource(() => api.get<Membership[]>(`${base}/memberships`), [base]);
  return (
    <div class="stack">
      <Section title="Members">
        <ListTable
          resource={members}
          columns={['Name', 'E-mail', 'Role', 'Since', 'Actions']}
          empty={
            <Empty title="Nobody is a member yet">
              <p>Administrators see every project anyway. Invite people below to give them access.</p>
            </Empty>
          }
          row={(m) => (
            <tr key={m.id}>
              <td>{m.user_display_name}</td>
              <td>{m.user_email}</td>
              <td>
                <RoleSelect member={m} base={base} onChanged={members.reload} />
              </td>
              <td>
                <Time iso={m.created_at} />
              </td>
              <td>
                <ConfirmButton
                  label="Remove"
                  what={m.user_email}
                  title={`Remove ${m.user_display_name} from ${project.name}?`}
                  confirm="Remove"
                  danger
                  small
                  onConfirm={async () => {
                    await api.del(`${base}/memberships/${m.id}`);
                    await members.reload();
                  }}
                >
                  <p>They lose access to this project at once (administrators keep seeing every project).</p>
                </ConfirmButton>
              </td>
            </tr>
          )}
        />
        {me.value?.is_admin && members.data && <AddMember base={base} members={members.data} onAdded={members.reload} />}
      </Section>
      <Invitations base={base} />
    </div>
  );
}
