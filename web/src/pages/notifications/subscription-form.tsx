// What a subscription (a user's) and a default subscription (a project's) share: the trigger, the filters
// (priorities, a task-name substring, a task-name glob), in-app, channels and the cooldown, as inputs named by the
// API's field paths (`filters/task_name_pattern`, `project_channel_ids`), and as words in the lists.
import type { ComponentChildren } from 'preact';
import type { Channel, Filters, Priority, Trigger } from '../../api/types.ts';
import { plural } from '../../lib/format.ts';
import { CheckGroup } from '../../ui/form-lists.tsx';
import { CheckboxField, SelectField, TextField, type Values } from '../../ui/form.tsx';
import { PRIORITIES, TRIGGER_TEXT } from './words.ts';

/** The trigger: a choice among those still free when adding, fixed when changing. */
export function TriggerInput(props: { fixed?: Trigger; free: readonly Trigger[] }) {
  if (props.fixed) {
    return (
      <p>
        Trigger: <strong>{TRIGGER_TEXT[props.fixed]}</strong> <code>{props.fixed}</code>
      </p>
    );
  }
  return (
    <SelectField
      label="Trigger"
      name="trigger"
      options={props.free.map((t) => ({ value: t, label: `${TRIGGER_TEXT[t]} (${t})` }))}
    />
  );
}

export function FilterInputs(props: { filters: Filters }) {
  const f = props.filters;
  return (
    <>
      <CheckGroup
        legend="Only for task priorities"
        name="filters/priority"
        options={PRIORITIES.map((p) => ({ value: p, label: p }))}
        checked={f.priority ?? []}
        hint="None ticked: any priority. Tasks that report no priority count as normal."
      />
      <TextField
        label="Task name contains"
        name="filters/task_name"
        defaultValue={f.task_name ?? ''}
        maxLength={500}
        hint="Optional: a part of the task's name, e.g. billing."
      />
      <TextField
        label="Task name matches"
        name="filters/task_name_pattern"
        defaultValue={f.task_name_pattern ?? ''}
        maxLength={200}
        placeholder="app.billing.*"
        hint="Optional glob: * any text, ? one character, [abc] one of them (at most five wildcards and three classes)."
      />
    </>
  );
}

export function ChannelChoice(props: {
  legend: string;
  name: string;
  channels: Channel[];
  checked: readonly string[];
  empty: ComponentChildren;
}) {
  return (
    <CheckGroup
      legend={props.legend}
      name={props.name}
      options={props.channels.map((c) => ({ value: c.id, label: c.is_active ? c.name : `${c.name} (inactive)` }))}
      checked={props.checked}
      empty={<p class="hint">{props.empty}</p>}
    />
  );
}

export function DeliveryInputs(props: { inApp: boolean; cooldown: number; children?: ComponentChildren }) {
  return (
    <>
      <CheckboxField label="In the app (the bell's inbox)" name="in_app" checked={props.inApp} />
      {props.children}
      <TextField
        label="Cooldown (seconds)"
        name="cooldown_seconds"
        type="number"
        min={0}
        max={86400}
        defaultValue={String(props.cooldown)}
        hint="After a notification, further ones for this trigger wait this long (0: every time; at most a day)."
      />
    </>
  );
}

/** The filters the form's inputs describe (empty ones left out). */
export function filtersOf(values: Values, form: HTMLFormElement): Filters {
  const filters: Filters = {};
  const priority = new FormData(form).getAll('filters/priority').map(String) as Priority[];
  if (priority.length) filters.priority = priority;
  const name = values['filters/task_name']?.trim();
  if (name) filters.task_name = name;
  const pattern = values['filters/task_name_pattern']?.trim();
  if (pattern) filters.task_name_pattern = pattern;
  return filters;
}

/** In-app, the channels ticked under `channelNames` and the cooldown, as the API names them. */
export function deliveryOf(values: Values, form: HTMLFormElement, ...channelNames: string[]) {
  const data = new FormData(form);
  const channels = Object.fromEntries(channelNames.map((n) => [n, data.getAll(n).map(String)]));
  return {
    in_app: (form.elements.namedItem('in_app') as HTMLInputElement).checked,
    cooldown_seconds: values.cooldown_seconds ? Number(values.cooldown_seconds) : 0,
    ...channels,
  };
}

/** The filters in words: "priority critical or high; name contains billing; name matches app.*". They are about
 * tasks: a trigger about agents or schedules without any fires always. */
export function filtersText(f: Filters, trigger: Trigger): string {
  const parts: string[] = [];
  if (f.priority?.length) parts.push(`priority ${f.priority.join(' or ')}`);
  if (f.task_name) parts.push(`name contains ${f.task_name}`);
  if (f.task_name_pattern) parts.push(`name matches ${f.task_name_pattern}`);
  return parts.length ? parts.join('; ') : trigger.startsWith('task.') ? 'every task' : 'always';
}

/** How a subscription reaches its owner: "in-app, ops-webhook, my-mail". */
export function routesText(inApp: boolean, ids: readonly string[], channels: readonly Channel[] | undefined): string {
  const names = ids.map((id) => channels?.find((c) => c.id === id)?.name ?? 'a deleted channel');
  const parts = [...(inApp ? ['in-app'] : []), ...names];
  return parts.length ? parts.join(', ') : 'nowhere';
}

export const cooldownText = (s: number): string =>
  s === 0 ? 'none' : s % 3600 === 0 ? plural(s / 3600, 'hour') : s % 60 === 0 ? plural(s / 60, 'minute') : plural(s, 'second');
