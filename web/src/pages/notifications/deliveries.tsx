// A delivery log, a project's (its admins: every attempt through the project's channels, and clearing it, all or
// up to a time) or a user's (attempts through their personal channels): newest first, a page at a time, with the
// outcome, the trigger, the channel, the task and the error as svc sanitised it.
import { useEffect, useState } from 'preact/hooks';
import { call } from '../../api/client.ts';
import type { DeliveriesCleared, Delivery, DeliveryPage } from '../../api/types.ts';
import { apiTimeOf } from '../../lib/api-time.ts';
import { plural, sentence } from '../../lib/format.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { projects } from '../../session.ts';
import { Badge, Empty, Time } from '../../ui/bits.tsx';
import { FormDialog } from '../../ui/form-dialog.tsx';
import { TextField } from '../../ui/form.tsx';
import { PagedSection } from '../../ui/paged-table.tsx';

const PAGE = 50;
const TEST_TRIGGER = 'test.dispatch';

/** The task a delivery was about, linking to its page. */
function TaskCell(props: { d: Delivery }) {
  const { d } = props;
  if (d.trigger === TEST_TRIGGER || !d.task_id) return <span class="muted">-</span>;
  const slug = projects.value.find((p) => p.id === d.project_id)?.slug;
  const label = d.task_name ?? d.task_id;
  return (
    <>
      {slug ? (
        <a href={`/projects/${encodeURIComponent(slug)}/tasks/${encodeURIComponent(d.task_engine ?? '')}/${encodeURIComponent(d.task_id)}`}>{label}</a>
      ) : (
        label
      )}
      {d.task_name && (
        <div class="muted small">
          <code>{d.task_id}</code>
        </div>
      )}
    </>
  );
}

function Row(props: { d: Delivery }) {
  const { d } = props;
  return (
    <tr>
      <td>
        <Time iso={d.sent_at} />
      </td>
      <td>
        {d.status === 'sent' ? <Badge tone="ok">sent</Badge> : <Badge tone="bad">failed</Badge>}
        {d.response_code !== null && <div class="muted small">{`status ${d.response_code}`}</div>}
      </td>
      <td>
        <code>{d.trigger}</code>
        {d.trigger === TEST_TRIGGER && <div class="muted small">channel test</div>}
      </td>
      <td>
        {d.channel_name}
        <div class="muted small">{d.channel_type}</div>
      </td>
      <td>
        <TaskCell d={d} />
      </td>
      <td>{d.error ? sentence(d.error) : <span class="muted">-</span>}</td>
    </tr>
  );
}

function ClearLog(props: { base: string; onCleared: (deleted: number) => Promise<void> }) {
  return (
    <FormDialog
      button="Clear…"
      buttonClass="secondary"
      ariaLabel="Clear the delivery log"
      title="Clear the delivery log"
      submit="Clear"
      onSubmit={async (v) => {
        const before = apiTimeOf(v.before);
        const r = await call<DeliveriesCleared>('DELETE', `${props.base}/deliveries`, { query: { before } });
        await props.onCleared(r.deleted);
      }}
    >
      <p>Deleted rows are gone for good; the audit trail records who cleared how many.</p>
      <TextField label="Only rows sent before" name="before" type="datetime-local" hint="Leave it empty to clear every row." />
    </FormDialog>
  );
}

/** `changed` counts what added rows since (channel tests on the same page): each change loads the log again. */
export function DeliveryLog(props: { base: string; title: string; clearable?: boolean; changed?: number }) {
  const page = usePaged<Delivery>(
    (cursor) => call<DeliveryPage>('GET', `${props.base}/deliveries`, { query: { limit: PAGE, cursor } }),
    [props.base],
  );
  const [cleared, setCleared] = useState<number | null>(null);
  useEffect(() => {
    if (props.changed) void page.reload();
  }, [props.changed]);
  return (
    <>
      <PagedSection
        title={props.title}
        paged={page}
        what="delivery attempt"
        columns={['Sent', 'Outcome', 'Trigger', 'Channel', 'Task', 'Error']}
        empty={
          <Empty title="Nothing sent yet">
            <p>Every attempt to send through a channel, a test included, shows here.</p>
          </Empty>
        }
        row={(d) => <Row key={d.id} d={d} />}
        actions={
          props.clearable && (
            <ClearLog
              base={props.base}
              onCleared={async (n) => {
                setCleared(n);
                await page.reload();
              }}
            />
          )
        }
      />
      {cleared !== null && (
        <p class="notice ok" role="status">
          {`Cleared ${plural(cleared, 'delivery row')}.`}
        </p>
      )}
    </>
  );
}
