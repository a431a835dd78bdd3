// /account/notifications: what the signed-in user is told of and where. Their personal channels (the same forms
// and tests as a project's; project admins can copy one of the project's channels, secrets and all, server-side),
// their subscriptions per project (trigger, filters, in-app, personal and project channels, cooldown; muted for a
// while, or paused), and the log of what was sent through their personal channels.
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import type { Channel, Project, Subscription } from '../../api/types.ts';
import { apiTimeOf } from '../../lib/api-time.ts';
import { useResource, type Resource } from '../../lib/use-resource.ts';
import { projects } from '../../session.ts';
import { Badge, ConfirmDialog, Empty, Loaded, PageHeader, Section, Time } from '../../ui/bits.tsx';
import { Dialog } from '../../ui/dialog.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { Form, SelectField, TextField } from '../../ui/form.tsx';
import { Table } from '../../ui/table.tsx';
import { ChannelsSection, NoChannels } from '../notifications/channels.tsx';
import { DeliveryLog } from '../notifications/deliveries.tsx';
import {
  ChannelChoice,
  cooldownText,
  DeliveryInputs,
  deliveryOf,
  FilterInputs,
  filtersOf,
  filtersText,
  routesText,
  TriggerInput,
} from '../notifications/subscription-form.tsx';
import { TRIGGER_TEXT, TRIGGERS } from '../notifications/words.ts';
import { projectPath } from '../project/requests.ts';

const channelsOf = (slug: string) => api.get<Channel[]>(`${projectPath(slug)}/notifications/channels`);

/** Copies one of a project's channels into the user's own (projects they administer). */
function ImportChannel(props: { adminProjects: Project[]; onImported: () => Promise<void> }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" class="secondary" onClick={() => setOpen(true)}>
        Copy from a project…
      </button>
      <Dialog open={open} title="Copy a project's channel" onClose={() => setOpen(false)}>
        <ImportForm {...props} onDone={() => setOpen(false)} />
      </Dialog>
    </>
  );
}

function ImportForm(props: { adminProjects: Project[]; onImported: () => Promise<void>; onDone: () => void }) {
  const all = useResource(
    () => Promise.all(props.adminProjects.map(async (p) => ({ project: p, channels: await channelsOf(p.slug) }))),
    [props.adminProjects.map((p) => p.slug).join('\n')],
  );
  return (
    <Loaded resource={all}>
      {(list) => {
        const options = list.flatMap(({ project, channels }) =>
          channels.map((c) => ({ value: `${project.slug}\n${c.id}`, label: `${project.name}: ${c.name} (${c.type})` })),
        );
        if (options.length === 0) return <p class="muted">None of the projects you administer has a channel yet.</p>;
        return (
          <Form
            submit="Copy channel"
            busyText="Copying…"
            label="Copy a project's channel"
            onSubmit={async (v) => {
              const [project_slug, channel_id] = (v.source ?? '').split('\n');
              await api.post('/user/channels/import_from_project', {
                project_slug,
                channel_id,
                ...(v.name?.trim() ? { name: v.name.trim() } : {}),
              });
              await props.onImported();
              props.onDone();
            }}
            actions={
              <button type="button" class="secondary" onClick={props.onDone}>
                Cancel
              </button>
            }
          >
            <p>The copy is yours: its settings and secrets are copied by svc, and later changes to either stay apart.</p>
            <SelectField label="Channel" name="source" options={options} />
            <TextField label="Name of your copy" name="name" maxLength={200} hint="Optional: “Copy of …” otherwise." />
          </Form>
        );
      }}
    </Loaded>
  );
}

/** Add (choosing the project and trigger) or change one subscription. */
function SubscriptionDialog(props: {
  item: Subscription | null;
  project: Project | null;
  subscriptions: Subscription[];
  userChannels: Channel[];
  onClose: () => void;
  onSaved: () => Promise<void>;
}) {
  const s = props.item;
  const choices = projects.value;
  const [slug, setSlug] = useState(props.project?.slug ?? choices[0]?.slug ?? '');
  const project = choices.find((p) => p.slug === slug) ?? props.project;
  const channels = useResource(() => (project ? channelsOf(project.slug) : Promise.resolve([])), [project?.slug]);
  const taken = props.subscriptions.filter((x) => x.project_id === project?.id).map((x) => x.trigger);
  const free = TRIGGERS.filter((t) => !taken.includes(t));
  const title = s ? `Change your subscription to ${s.trigger}` : 'Subscribe';
  return (
    <Dialog open title={title} onClose={props.onClose} wide>
      {!s && (
        <SelectField
          label="Project"
          name="project"
          value={slug}
          options={choices.map((p) => ({ value: p.slug, label: p.name }))}
          onChange={setSlug}
        />
      )}
      {s && project && <p>{`Project: ${project.name}`}</p>}
      {!s && free.length === 0 ? (
        <p class="muted">You are subscribed to every trigger of this project; change those subscriptions instead.</p>
      ) : (
        <Loaded resource={channels}>
          {(projectChannels) => (
            <Form
              key={slug}
              label={title}
              submit={s ? 'Save changes' : 'Subscribe'}
              busyText="Saving…"
              onSubmit={async (v, form) => {
                const body = { filters: filtersOf(v, form), ...deliveryOf(v, form, 'user_channel_ids', 'project_channel_ids') };
                if (s) await api.patch(`/user/subscriptions/${s.id}`, body);
                else await api.post('/user/subscriptions', { project_id: project!.id, trigger: v.trigger, ...body });
                await props.onSaved();
                props.onClose();
              }}
              actions={
                <button type="button" class="secondary" onClick={props.onClose}>
                  Cancel
                </button>
              }
            >
              <TriggerInput fixed={s?.trigger} free={free} />
              <FilterInputs filters={s?.filters ?? {}} />
              <DeliveryInputs inApp={s?.in_app ?? true} cooldown={s?.cooldown_seconds ?? 0}>
                <ChannelChoice
                  legend="Your channels"
                  name="user_channel_ids"
                  channels={props.userChannels}
                  checked={s?.user_channel_ids ?? []}
                  empty="You have no channels of your own yet (see above)."
                />
                <ChannelChoice
                  legend="The project's channels"
                  name="project_channel_ids"
                  channels={projectChannels}
                  checked={s?.project_channel_ids ?? []}
                  empty="The project has no channels."
                />
              </DeliveryInputs>
            </Form>
          )}
        </Loaded>
      )}
    </Dialog>
  );
}

const HOUR = 3600;
const MUTE_FOR = [
  { value: String(HOUR), label: '1 hour' },
  { value: String(8 * HOUR), label: '8 hours' },
  { value: String(24 * HOUR), label: '1 day' },
  { value: String(7 * 24 * HOUR), label: '1 week' },
];

function MuteDialog(props: { item: Subscription; onClose: () => void; onSaved: () => Promise<void> }) {
  return (
    <Dialog open title={`Mute ${props.item.trigger}`} onClose={props.onClose}>
      <Form
        submit="Mute"
        label={`Mute ${props.item.trigger}`}
        onSubmit={async (v) => {
          const until = v.until ? apiTimeOf(v.until) : new Date(Date.now() + Number(v.for) * 1000).toISOString();
          if (!until) throw new Error('That time could not be read.');
          await api.patch(`/user/subscriptions/${props.item.id}`, { muted_until: until });
          await props.onSaved();
          props.onClose();
        }}
        actions={
          <button type="button" class="secondary" onClick={props.onClose}>
            Cancel
          </button>
        }
      >
        <p>Nothing is sent for it until then (nothing is kept to send later either).</p>
        <SelectField label="Mute for" name="for" options={MUTE_FOR} />
        <TextField label="Or until" name="until" type="datetime-local" hint="A time of your own instead (your local time)." />
      </Form>
    </Dialog>
  );
}

const isMuted = (s: Subscription) => s.muted_until !== null && Date.parse(s.muted_until) > Date.now();

function State(props: { s: Subscription }) {
  const { s } = props;
  if (!s.is_active) return <Badge>paused</Badge>;
  if (isMuted(s))
    return (
      <>
        <Badge tone="warn">muted</Badge>
        <div class="muted small">
          until <Time iso={s.muted_until} />
        </div>
      </>
    );
  return <Badge tone="ok">active</Badge>;
}

type Editing = { item: Subscription | null; project: Project | null };

/** One project's subscriptions; the project's channels are read to name those the subscriptions send to. */
function ProjectSubscriptions(props: {
  project: Project | undefined;
  subs: Subscription[];
  userChannels: Channel[] | undefined;
  onEdit: (e: Editing) => void;
  onMute: (s: Subscription) => void;
  onRemove: (s: Subscription) => void;
  onChanged: () => Promise<void>;
}) {
  const { project } = props;
  const named = props.subs.some((s) => s.project_channel_ids.length > 0);
  const channels = useResource(() => (project && named ? channelsOf(project.slug) : Promise.resolve([])), [project?.slug, named]);
  const [error, setError] = useState<ApiError | null>(null);
  const patch = async (s: Subscription, body: Record<string, unknown>) => {
    setError(null);
    try {
      await api.patch(`/user/subscriptions/${s.id}`, body);
      await props.onChanged();
    } catch (e) {
      setError(asApiError(e));
    }
  };
  const title = project ? project.name : 'A project you no longer belong to';
  return (
    <>
      <h3>{title}</h3>
      <ErrorNotice error={error} />
      <Table columns={['Trigger', 'For', 'Sent to', 'Cooldown', 'State', 'Actions']}>
        {props.subs.map((s) => (
          <tr key={s.id} aria-label={`${title}: ${s.trigger}`}>
            <td>
              {TRIGGER_TEXT[s.trigger]}
              <div class="muted small">
                <code>{s.trigger}</code>
              </div>
            </td>
            <td>{filtersText(s.filters, s.trigger)}</td>
            <td>
              {routesText(
                s.in_app,
                [...s.user_channel_ids, ...s.project_channel_ids],
                [...(props.userChannels ?? []), ...(channels.data ?? [])],
              )}
            </td>
            <td>{cooldownText(s.cooldown_seconds)}</td>
            <td>
              <State s={s} />
            </td>
            <td class="row-actions">
              {project && (
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Edit ${s.trigger} in ${title}`}
                  onClick={() => props.onEdit({ item: s, project })}
                >
                  Edit
                </button>
              )}
              {isMuted(s) ? (
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Unmute ${s.trigger} in ${title}`}
                  onClick={() => void patch(s, { muted_until: null })}
                >
                  Unmute
                </button>
              ) : (
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Mute ${s.trigger} in ${title}`}
                  onClick={() => props.onMute(s)}
                >
                  Mute…
                </button>
              )}
              <button
                type="button"
                class="secondary small"
                aria-label={`${s.is_active ? 'Pause' : 'Resume'} ${s.trigger} in ${title}`}
                onClick={() => void patch(s, { is_active: !s.is_active })}
              >
                {s.is_active ? 'Pause' : 'Resume'}
              </button>
              <button
                type="button"
                class="danger small"
                aria-label={`Remove ${s.trigger} in ${title}`}
                onClick={() => props.onRemove(s)}
              >
                Remove
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

function Subscriptions(props: { userChannels: Resource<Channel[]> }) {
  const subs = useResource(() => api.get<Subscription[]>('/user/subscriptions'), []);
  const [editing, setEditing] = useState<Editing | null>(null);
  const [muting, setMuting] = useState<Subscription | null>(null);
  const [removing, setRemoving] = useState<Subscription | null>(null);
  const list = projects.value;
  return (
    <Section
      title="Your subscriptions"
      actions={
        list.length > 0 && (
          <button type="button" class="primary" disabled={!subs.data} onClick={() => setEditing({ item: null, project: null })}>
            Subscribe…
          </button>
        )
      }
    >
      <p class="muted">
        One subscription per trigger and project: what you are told of, about which tasks, and where. Joining a project subscribes
        you to its defaults.
      </p>
      {editing && subs.data && (
        <SubscriptionDialog
          item={editing.item}
          project={editing.project}
          subscriptions={subs.data}
          userChannels={props.userChannels.data ?? []}
          onClose={() => setEditing(null)}
          onSaved={subs.reload}
        />
      )}
      {muting && <MuteDialog item={muting} onClose={() => setMuting(null)} onSaved={subs.reload} />}
      <ConfirmDialog
        open={removing !== null}
        title={`Remove your subscription to ${removing?.trigger ?? ''}?`}
        confirm="Remove"
        danger
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          await api.del(`/user/subscriptions/${removing!.id}`);
          await subs.reload();
        }}
      >
        <p>You are no longer told of it in this project (muting or pausing it keeps it for later).</p>
      </ConfirmDialog>
      <Loaded resource={subs}>
        {(all) => {
          if (all.length === 0) {
            return (
              <Empty title="You are not subscribed to anything">
                <p>Subscribe to what you want to hear about: failed tasks, agents going offline, schedules…</p>
              </Empty>
            );
          }
          const ids = [...new Set(all.map((s) => s.project_id))];
          const named = ids.map((id) => ({ id, project: list.find((p) => p.id === id) }));
          named.sort((a, b) => (a.project?.name ?? '\uffff').localeCompare(b.project?.name ?? '\uffff'));
          return named.map(({ id, project }) => (
            <ProjectSubscriptions
              key={id}
              project={project}
              subs={all
                .filter((s) => s.project_id === id)
                .sort((a, b) => TRIGGERS.indexOf(a.trigger) - TRIGGERS.indexOf(b.trigger))}
              userChannels={props.userChannels.data}
              onEdit={setEditing}
              onMute={setMuting}
              onRemove={setRemoving}
              onChanged={subs.reload}
            />
          ));
        }}
      </Loaded>
    </Section>
  );
}

export function AccountNotificationsPage() {
  const channels = useResource(() => api.get<Channel[]>('/user/channels'), []);
  const adminProjects = projects.value.filter((p) => p.role === 'admin');
  const [tests, setTests] = useState(0);
  return (
    <>
      <PageHeader
        title="Notifications"
        lead="Your own channels, what you subscribe to in each project, and what was sent through your channels."
      />
      <div class="stack">
        <ChannelsSection
          scope={{ base: '/user', manage: true, onTested: () => setTests((n) => n + 1) }}
          channels={channels}
          title="Your channels"
          empty={<NoChannels manage />}
          extraActions={adminProjects.length > 0 && <ImportChannel adminProjects={adminProjects} onImported={channels.reload} />}
        />
        <Subscriptions userChannels={channels} />
        <DeliveryLog base="/user" title="Your delivery log" changed={tests} />
      </div>
    </>
  );
}
