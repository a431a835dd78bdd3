// Inputs holding a list (a text area with one item a line, a group of checkboxes sharing a name): each shows the
// server's messages for its own path and for the items below it (`/config/headers/X-Team`, `/project_channel_ids/0`).
// Apart from form.tsx so that only the pages using them (the notification settings) carry them.
import type { ComponentChildren } from 'preact';
import { useContext, useId } from 'preact/hooks';
import { sentence } from '../lib/format.ts';
import { FormContext, type FormState } from './errors.tsx';

/** The server's messages for a field and everything below it: `/config/headers/X-Team` for `config/headers` reads
 * "X-Team: …", `/config/to_addrs/1` reads "<item> 2: …" (`item` names what a position counts: a line, a tick). */
function messagesAt(form: FormState | null, name: string, item: string): string[] {
  const path = `/${name}`;
  return (form?.error?.fields ?? [])
    .filter((f) => f.path === path || f.path.startsWith(`${path}/`))
    .map((f) => {
      const below = f.path.slice(path.length + 1).replace(/~1/g, '/').replace(/~0/g, '~');
      if (!below) return sentence(f.message);
      return `${/^\d+$/.test(below) ? `${item} ${Number(below) + 1}` : below}: ${f.message}`;
    });
}

function FieldMessages(props: { id: string; messages: string[] }) {
  if (props.messages.length === 0) return null;
  return (
    <p class="field-error" id={props.id}>
      {props.messages.join('; ')}
    </p>
  );
}

/** A multi-line input (one item a line); shows the messages of its path and of the items below it. */
export function TextAreaField(props: {
  label: string;
  name: string;
  hint?: ComponentChildren;
  defaultValue?: string;
  rows?: number;
  required?: boolean;
  placeholder?: string;
}) {
  const id = useId();
  const form = useContext(FormContext);
  const messages = messagesAt(form, props.name, 'Line');
  const describedBy =
    [props.hint ? `${id}-hint` : '', messages.length ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        name={props.name}
        data-subpaths=""
        rows={props.rows ?? 3}
        required={props.required}
        placeholder={props.placeholder}
        defaultValue={props.defaultValue}
        aria-invalid={messages.length ? true : undefined}
        aria-describedby={describedBy}
      />
      {props.hint && (
        <p class="hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      <FieldMessages id={`${id}-error`} messages={messages} />
    </div>
  );
}

/** Checkboxes sharing one name (read with FormData.getAll); shows the messages of the list and of its items. */
export function CheckGroup(props: {
  legend: string;
  name: string;
  options: readonly { value: string; label: ComponentChildren }[];
  checked: readonly string[];
  hint?: ComponentChildren;
  empty?: ComponentChildren;
}) {
  const id = useId();
  const form = useContext(FormContext);
  const messages = messagesAt(form, props.name, 'Ticked choice');
  return (
    <fieldset class="field" name={props.name} data-subpaths="" aria-describedby={messages.length ? `${id}-error` : undefined}>
      <legend>{props.legend}</legend>
      {props.options.length === 0 && props.empty}
      {props.options.map((o) => (
        <label key={o.value} class="check-row">
          <input type="checkbox" name={props.name} value={o.value} defaultChecked={props.checked.includes(o.value)} /> {o.label}
        </label>
      ))}
      {props.hint && <p class="hint">{props.hint}</p>}
      <FieldMessages id={`${id}-error`} messages={messages} />
    </fieldset>
  );
}
