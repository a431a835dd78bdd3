// Channels, a project's (its admins manage them, every member sees the list) or a user's own: the list with type,
// destination and state, a form per channel type to add or change one, a test through a saved channel or through
// the form's unsaved settings (the answer shown: delivered or not, status code, error, the receiver's answer), and
// deleting.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, asApiError, type ApiError } from '../../api/client.ts';
import type { Channel, ChannelTestResult, ChannelType } from '../../api/types.ts';
import type { Resource } from '../../lib/use-resource.ts';
import { Badge, ConfirmDialog, Empty, RefreshButton, Section } from '../../ui/bits.tsx';
import { Dialog } from '../../ui/dialog.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { CheckboxField, Form, SelectField, TextField } from '../../ui/form.tsx';
import { ListTable } from '../../ui/table.tsx';
import { ChannelInputs, configOf, destinationOf, TestResultNotice } from './channel-form.tsx';
import { CHANNEL_TYPE_TEXT, CHANNEL_TYPES } from './words.ts';

/** Whose channels: `base` is the API path they live under (`/projects/{slug}/notifications` or `/user`). */
export interface ChannelScope {
  base: string;
  /** May add, change, test and delete (project admins; everyone for their own). */
  manage: boolean;
  /** After a test was sent (it wrote a delivery log row). */
  onTested?: () => void;
}

/** The add / change dialog: one form, "Send test" tries its settings without saving them. */
function ChannelDialog(props: {
  scope: ChannelScope;
  channel: Channel | null;
  onClose: () => void;
  onSaved: () => Promise<void>;
}) {
  const editing = props.channel;
  const [type, setType] = useState<ChannelType>(editing?.type ?? 'webhook');
  const [result, setResult] = useState<ChannelTestResult | null>(null);
  const saved = editing?.config ?? {};
  return (
    <Dialog open title={editing ? `Change ${editing.name}` : 'Add a channel'} onClose={props.onClose} wide>
      <Form
        submit={editing ? 'Save changes' : 'Add channel'}
        busyText="Saving…"
        label={editing ? `Change ${editing.name}` : 'Add a channel'}
        onSubmit={async (v, form) => {
          const config = configOf(type, v, form, saved);
          const is_active = (form.elements.namedItem('is_active') as HTMLInputElement).checked;
          if (editing) await api.patch(`${props.scope.base}/channels/${editing.id}`, { name: v.name?.trim(), config, is_active });
          else await api.post(`${props.scope.base}/channels`, { name: v.name?.trim(), type, config, is_active });
          await props.onSaved();
          props.onClose();
        }}
        secondary={{
          label: 'Send test',
          busyText: 'Sending…',
          run: async (v, form) => {
            setResult(null);
            const config = configOf(type, v, form, saved);
            // Unchanged settings of a saved channel: its own test, with its stored secrets.
            if (editing && JSON.stringify(config) === JSON.stringify(saved)) {
              setResult(await api.post<ChannelTestResult>(`${props.scope.base}/channels/${editing.id}/test`));
            } else {
              // Changed settings of a saved channel: its id lets a secret left masked be the saved one.
              const body = editing ? { type, config, channel_id: editing.id } : { type, config };
              setResult(await api.post<ChannelTestResult>(`${props.scope.base}/channels/test`, body));
            }
            props.scope.onTested?.();
          },
        }}
        actions={
          <button type="button" class="secondary" onClick={props.onClose}>
            Cancel
          </button>
        }
      >
        {editing ? (
          <p>
            Type: <strong>{CHANNEL_TYPE_TEXT[editing.type]}</strong>
          </p>
        ) : (
          <SelectField
            label="Type"
            name="type"
            value={type}
            options={CHANNEL_TYPES.map((t) => ({ value: t, label: CHANNEL_TYPE_TEXT[t] }))}
            onChange={(t) => {
              setType(t as ChannelType);
              setResult(null);
            }}
          />
        )}
        <TextField
          label="Name"
          name="name"
          required
          maxLength={200}
          defaultValue={editing?.name ?? ''}
          hint="How subscriptions and the delivery log name it."
        />
        <ChannelInputs key={type} type={type} config={saved} editing={!!editing} />
        <CheckboxField
          label="Active"
          name="is_active"
          checked={editing?.is_active ?? true}
          hint="An inactive channel keeps its settings but sends nothing."
        />
        {result && <TestResultNotice result={result} what="these settings" />}
      </Form>
    </Dialog>
  );
}

/** The last test from the list: which channel, and its result or why it could not run. */
type ListTest = { channel: Channel; result?: ChannelTestResult; error?: ApiError };

export function ChannelsSection(props: {
  scope: ChannelScope;
  channels: Resource<Channel[]>;
  title: string;
  empty: ComponentChildren;
  /** More buttons beside "Add channel" (copying from elsewhere). */
  extraActions?: ComponentChildren;
}) {
  const { scope, channels } = props;
  const [editing, setEditing] = useState<Channel | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Channel | null>(null);
  const [testing, setTesting] = useState<string | null>(null);
  const [test, setTest] = useState<ListTest | null>(null);
  const runTest = async (c: Channel) => {
    setTesting(c.id);
    setTest(null);
    try {
      setTest({ channel: c, result: await api.post<ChannelTestResult>(`${scope.base}/channels/${c.id}/test`) });
      scope.onTested?.();
    } catch (e) {
      setTest({ channel: c, error: asApiError(e) });
    } finally {
      setTesting(null);
    }
  };
  return (
    <Section
      title={props.title}
      actions={
        <div class="page-actions">
          <RefreshButton onRefresh={channels.reload} busy={channels.loading} />
          {props.extraActions}
          {scope.manage && (
            <button type="button" class="primary" onClick={() => setEditing('new')}>
              Add channel
            </button>
          )}
        </div>
      }
    >
      {editing && (
        <ChannelDialog
          scope={scope}
          channel={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={channels.reload}
        />
      )}
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete ${deleting?.name ?? ''}?`}
        confirm="Delete channel"
        danger
        onClose={() => setDeleting(null)}
        onConfirm={async () => {
          await api.del(`${scope.base}/channels/${deleting!.id}`);
          if (test?.channel.id === deleting!.id) setTest(null);
          await channels.reload();
        }}
      >
        <p>Subscriptions that send through it stop naming it. Its delivery log rows stay.</p>
      </ConfirmDialog>
      <ListTable
        resource={channels}
        columns={['Name', 'Type', 'Sends to', 'State', ...(scope.manage ? ['Actions'] : [])]}
        empty={props.empty}
        row={(c) => (
          <tr key={c.id}>
            <td>{c.name}</td>
            <td>{CHANNEL_TYPE_TEXT[c.type]}</td>
            <td>{destinationOf(c)}</td>
            <td>{c.is_active ? <Badge tone="ok">active</Badge> : <Badge>inactive</Badge>}</td>
            {scope.manage && (
              <td class="row-actions">
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Test ${c.name}`}
                  disabled={testing !== null}
                  onClick={() => void runTest(c)}
                >
                  {testing === c.id ? 'Sending…' : 'Test'}
                </button>
                <button type="button" class="secondary small" aria-label={`Edit ${c.name}`} onClick={() => setEditing(c)}>
                  Edit
                </button>
                <button type="button" class="danger small" aria-label={`Delete ${c.name}`} onClick={() => setDeleting(c)}>
                  Delete
                </button>
              </td>
            )}
          </tr>
        )}
      />
      {test?.result && <TestResultNotice result={test.result} what={test.channel.name} />}
      {test?.error && <ErrorNotice error={test.error} title={`Test of ${test.channel.name}`} />}
    </Section>
  );
}

/** The empty list, for those who may add a channel and for those who may not. */
export function NoChannels(props: { manage: boolean; children?: ComponentChildren }) {
  return (
    <Empty title="No channels yet">
      <p>
        {props.manage
          ? 'A channel is somewhere svc sends notifications: a webhook, e-mail, Slack, Discord, Teams, Telegram or PagerDuty. Add one, send it a test, then name it in subscriptions.'
          : 'A project admin adds channels (a webhook, e-mail, chat or PagerDuty) that subscriptions can send through.'}
      </p>
      {props.children}
    </Empty>
  );
}
