// Forms that read their inputs on submit, show a busy button, and put the server's field messages next to
// the inputs they belong to (the rest in one notice under the form).
import type { ComponentChildren } from 'preact';
import { useContext, useId, useState } from 'preact/hooks';
import { asApiError } from '../api/client.ts';
import { sentence } from '../lib/format.ts';
import { ErrorNotice, FormContext, type FormState } from './errors.tsx';

export type Values = Record<string, string>;

interface FormProps {
  onSubmit: (values: Values, form: HTMLFormElement) => Promise<void>;
  submit: string;
  busyText?: string;
  children?: ComponentChildren;
  /** Extra buttons beside the submit button (Cancel). */
  actions?: ComponentChildren;
  /** Empty the inputs after a success. */
  resetOnSuccess?: boolean;
  /** A second action on the same inputs (a channel's "Send test"): checked, busy and failing like the submit. */
  secondary?: { label: string; busyText?: string; run: (values: Values, form: HTMLFormElement) => Promise<void> };
  label?: string;
  class?: string;
}

/** The form's inputs by name (text values; checkboxes sharing a name are read with FormData.getAll). */
function valuesOf(form: HTMLFormElement): Values {
  const values: Values = {};
  new FormData(form).forEach((v, k) => {
    if (typeof v === 'string') values[k] = v;
  });
  return values;
}

/** The paths whose messages the form's own inputs show: `/name` for each, and `/name/` (everything below it) for
 * inputs marked data-subpaths (a list in a text area, a group of checkboxes). */
function shownPaths(form: HTMLFormElement): Set<string> {
  const shown = new Set<string>();
  for (const el of form.elements) {
    const name = (el as HTMLInputElement).name;
    if (!name) continue;
    shown.add(`/${name}`);
    if ((el as HTMLElement).dataset.subpaths !== undefined) shown.add(`/${name}/`);
  }
  return shown;
}

export function Form(props: FormProps) {
  const [busy, setBusy] = useState<'submit' | 'secondary' | null>(null);
  const [state, setState] = useState<FormState>({ error: null, shown: new Set() });
  const run = async (form: HTMLFormElement, which: 'submit' | 'secondary') => {
    setBusy(which);
    setState({ error: null, shown: new Set() });
    try {
      if (which === 'submit') {
        await props.onSubmit(valuesOf(form), form);
        if (props.resetOnSuccess && form.isConnected) form.reset();
      } else await props.secondary!.run(valuesOf(form), form);
    } catch (err) {
      // The inputs this form has show their own field messages; the notice lists the rest.
      setState({ error: asApiError(err), shown: shownPaths(form) });
    } finally {
      setBusy(null);
    }
  };
  const onSubmit = (e: Event) => {
    e.preventDefault();
    void run(e.currentTarget as HTMLFormElement, 'submit');
  };
  return (
    <FormContext.Provider value={state}>
      <form class={props.class ?? 'form'} onSubmit={onSubmit} aria-label={props.label} aria-busy={busy !== null}>
        {props.children}
        <ErrorNotice error={state.error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy !== null}>
            {busy === 'submit' ? (props.busyText ?? 'Working…') : props.submit}
          </button>
          {props.secondary && (
            <button
              type="button"
              class="secondary"
              disabled={busy !== null}
              onClick={(e) => {
                const form = (e.currentTarget as HTMLButtonElement).form!;
                if (form.reportValidity()) void run(form, 'secondary');
              }}
            >
              {busy === 'secondary' ? (props.secondary.busyText ?? 'Working…') : props.secondary.label}
            </button>
          )}
          {props.actions}
        </div>
      </form>
    </FormContext.Provider>
  );
}

/** The input attributes the dashboard's text fields use. */
interface TextFieldProps {
  label: string;
  name: string;
  hint?: ComponentChildren;
  type?: 'text' | 'email' | 'password' | 'number' | 'search' | 'url' | 'datetime-local';
  defaultValue?: string;
  required?: boolean;
  autoFocus?: boolean;
  autoComplete?: string;
  inputMode?: 'text' | 'numeric' | 'email';
  placeholder?: string;
  minLength?: number;
  maxLength?: number;
  min?: number;
  max?: number;
  /** A <datalist> of suggestions, by id. */
  list?: string;
}

/** Label, input, hint and the server's message for this field (by its name, e.g. `/password`). */
export function TextField(props: TextFieldProps) {
  const { label, name, hint, type, ...input } = props;
  const id = useId();
  const form = useContext(FormContext);
  const message = form?.error?.fieldMessage(name);
  const describedBy = [hint ? `${id}-hint` : '', message ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {/* Preact types <input> as one union member per `type`; ours is chosen at run time. */}
      <input
        id={id}
        name={name}
        type={(type ?? 'text') as 'text'}
        {...input}
        aria-invalid={message ? true : undefined}
        aria-describedby={describedBy}
      />
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {message && (
        <p class="field-error" id={`${id}-error`}>
          {sentence(message)}
        </p>
      )}
    </div>
  );
}

export function SelectField(props: {
  label: string;
  name: string;
  options: readonly (string | { value: string; label: string })[];
  value?: string;
  hint?: string;
  onChange?: (value: string) => void;
}) {
  const id = useId();
  const form = useContext(FormContext);
  const message = form?.error?.fieldMessage(props.name);
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        aria-invalid={message ? true : undefined}
        onChange={props.onChange ? (e) => props.onChange!((e.currentTarget as HTMLSelectElement).value) : undefined}
      >
        {props.options.map((o) => {
          const { value, label } = typeof o === 'string' ? { value: o, label: o } : o;
          return (
            <option key={value} value={value} selected={value === props.value}>
              {label}
            </option>
          );
        })}
      </select>
      {props.hint && <p class="hint">{props.hint}</p>}
      {message && <p class="field-error">{sentence(message)}</p>}
    </div>
  );
}

export function CheckboxField(props: { label: string; name: string; checked?: boolean; hint?: string; value?: string }) {
  const id = useId();
  const form = useContext(FormContext);
  const message = form?.error?.fieldMessage(props.name);
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        name={props.name}
        value={props.value ?? 'on'}
        defaultChecked={props.checked}
        aria-invalid={message ? true : undefined}
        aria-describedby={message ? `${id}-error` : undefined}
      />
      <label for={id}>{props.label}</label>
      {props.hint && <p class="hint">{props.hint}</p>}
      {message && (
        <p class="field-error" id={`${id}-error`}>
          {sentence(message)}
        </p>
      )}
    </div>
  );
}

/** Submitted values without the empty ones, for optional fields the API wants absent rather than blank. */
export function present(values: Values, ...names: string[]): Values {
  const out: Values = {};
  for (const n of names) if (values[n]?.trim()) out[n] = values[n]!.trim();
  return out;
}
