// /projects/:slug/notifications: the project's channels (every member sees them; admins add, change, test and
// delete), its default subscriptions (what a member is subscribed to on joining) and its delivery log (admins).
// A chunk of its own (sections.ts): visited now and then, by admins above all.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Channel, DefaultSubscription, Project } from '../../api/types.ts';
import { useResource, type Resource } from '../../lib/use-resource.ts';
import { ConfirmDialog, Empty, Section } from '../../ui/bits.tsx';
import { Dialog } from '../../ui/dialog.tsx';
import { Form } from '../../ui/form.tsx';
import { ListTable } from '../../ui/table.tsx';
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
import { projectPath } from './requests.ts';
import type { ProjectPageProps } from './sections.ts';

function DefaultDialog(props: {
  base: string;
  item: DefaultSubscription | null;
  taken: readonly string[];
  channels: Channel[];
  onClose: () => void;
  onSaved: () => Promise<void>;
}) {
  const d = props.item;
  const title = d ? `Change the default for ${d.trigger}` : 'Add a default subscription';
  return (
    <Dialog open title={title} onClose={props.onClose} wide>
      <Form
        label={title}
        submit={d ? 'Save changes' : 'Add default'}
        busyText="Saving…"
        onSubmit={async (v, form) => {
          const body = { filters: filtersOf(v, form), ...deliveryOf(v, form, 'project_channel_ids') };
          if (d) await api.patch(`${props.base}/defaults/${d.id}`, body);
          else await api.post(`${props.base}/defaults`, { trigger: v.trigger, ...body });
          await props.onSaved();
          props.onClose();
        }}
        actions={
          <button type="button" class="secondary" onClick={props.onClose}>
            Cancel
          </button>
        }
      >
        <TriggerInput fixed={d?.trigger} free={TRIGGERS.filter((t) => !props.taken.includes(t))} />
        <FilterInputs filters={d?.filters ?? {}} />
        <DeliveryInputs inApp={d?.in_app ?? true} cooldown={d?.cooldown_seconds ?? 0}>
          <ChannelChoice
            legend="Project channels"
            name="project_channel_ids"
            channels={props.channels}
            checked={d?.project_channel_ids ?? []}
            empty="This project has no channels yet: add one above to send beyond the app."
          />
        </DeliveryInputs>
      </Form>
    </Dialog>
  );
}

function Defaults(props: { project: Project; channels: Resource<Channel[]> }) {
  const base = `${projectPath(props.project.slug)}/notifications`;
  const defaults = useResource(
    async () =>
      (await api.get<DefaultSubscription[]>(`${base}/defaults`)).sort(
        (a, b) => TRIGGERS.indexOf(a.trigger) - TRIGGERS.indexOf(b.trigger),
      ),
    [base],
  );
  const [editing, setEditing] = useState<DefaultSubscription | 'new' | null>(null);
  const [removing, setRemoving] = useState<DefaultSubscription | null>(null);
  const taken = defaults.data?.map((d) => d.trigger) ?? [];
  return (
    <Section
      title="Default subscriptions"
      actions={
        taken.length < TRIGGERS.length && (
          <button type="button" class="primary" onClick={() => setEditing('new')} disabled={!defaults.data}>
            Add default
          </button>
        )
      }
    >
      <p class="muted">
        Whoever joins the project gets these as subscriptions of their own, and changes them as they like. Changing a default
        changes nothing for those who joined before.
      </p>
      {editing && (
        <DefaultDialog
          base={base}
          item={editing === 'new' ? null : editing}
          taken={taken}
          channels={props.channels.data ?? []}
          onClose={() => setEditing(null)}
          onSaved={defaults.reload}
        />
      )}
      <ConfirmDialog
        open={removing !== null}
        title={`Remove the default for ${removing?.trigger ?? ''}?`}
        confirm="Remove default"
        danger
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          await api.del(`${base}/defaults/${removing!.id}`);
          await defaults.reload();
        }}
      >
        <p>New members are no longer subscribed to it; members keep the subscriptions it gave them.</p>
      </ConfirmDialog>
      <ListTable
        resource={defaults}
        columns={['Trigger', 'For', 'Sent to', 'Cooldown', 'Actions']}
        empty={
          <Empty title="No default subscriptions">
            <p>New members start with no subscriptions. Add one, e.g. failed tasks in the app.</p>
          </Empty>
        }
        row={(d) => (
          <tr key={d.id}>
            <td>
              {TRIGGER_TEXT[d.trigger]}
              <div class="muted small">
                <code>{d.trigger}</code>
              </div>
            </td>
            <td>{filtersText(d.filters, d.trigger)}</td>
            <td>{routesText(d.in_app, d.project_channel_ids, props.channels.data)}</td>
            <td>{cooldownText(d.cooldown_seconds)}</td>
            <td class="row-actions">
              <button
                type="button"
                class="secondary small"
                aria-label={`Edit the default for ${d.trigger}`}
                onClick={() => setEditing(d)}
              >
                Edit
              </button>
              <button
                type="button"
                class="danger small"
                aria-label={`Remove the default for ${d.trigger}`}
                onClick={() => setRemoving(d)}
              >
                Remove
              </button>
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

export function ProjectNotifications({ project }: ProjectPageProps) {
  const base = `${projectPath(project.slug)}/notifications`;
  const channels = useResource(() => api.get<Channel[]>(`${base}/channels`), [base]);
  const admin = project.role === 'admin';
  const [tests, setTests] = useState(0);
  return (
    <div class="stack">
      <ChannelsSection
        scope={{ base, manage: admin, onTested: () => setTests((n) => n + 1) }}
        channels={channels}
        title="Channels"
        empty={<NoChannels manage={admin} />}
      />
      {admin ? (
        <>
          <Defaults project={project} channels={channels} />
          <DeliveryLog base={base} title="Delivery log" clearable changed={tests} />
        </>
      ) : (
        <p class="muted">
          What you are told of, and where, is yours to choose: <a href="/account/notifications">your notification settings</a>.
          Project admins manage the channels, the defaults for new members and the delivery log.
        </p>
      )}
    </div>
  );
}
