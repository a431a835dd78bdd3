// Small building blocks every page uses: page header, sections, empty states, loading, times, badges, and a
// button that asks before it does something that cannot be undone.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useState } from 'preact/hooks';
import { asApiError, type ApiError } from '../api/client.ts';
import type { Resource } from '../lib/use-resource.ts';
import { fullTime, when } from '../lib/format.ts';
import { Dialog } from './dialog.tsx';
import { ErrorNotice } from './errors.tsx';

export function PageHeader(props: { title: string; lead?: ComponentChildren; actions?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${props.title} · svc`;
  }, [props.title]);
  return (
    <header class="page-head">
      <div>
        <h1>{props.title}</h1>
        {props.lead && <p class="lead">{props.lead}</p>}
      </div>
      {props.actions && <div class="page-actions">{props.actions}</div>}
    </header>
  );
}

/** A titled card; its heading names the region for assistive technology. */
export function Section(props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = useId();
  return (
    <section class="card" aria-labelledby={id}>
      <div class="card-head">
        <h2 id={id}>{props.title}</h2>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}

export function Empty(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      {props.children}
    </div>
  );
}

/** The resource's data through `render`, or its loading state, or its error. */
export function Loaded<T>(props: { resource: Resource<T>; children: (data: T) => ComponentChildren }) {
  const { data, error, loading } = props.resource;
  if (error && data === undefined) return <ErrorNotice error={error} />;
  if (data === undefined)
    return (
      <p class="muted" aria-busy={loading}>
        Loading…
      </p>
    );
  return (
    <>
      {error && <ErrorNotice error={error} />}
      {props.children(data)}
    </>
  );
}

export function Time(props: { iso: string | null | undefined; empty?: string }) {
  if (!props.iso) return <span class="muted">{props.empty ?? 'never'}</span>;
  return (
    <time dateTime={props.iso} title={fullTime(props.iso)}>
      {when(props.iso)}
    </time>
  );
}

/** One fact of a <Facts> list: label, value, and a test id for the value when tests read it. */
export type Fact = readonly [label: string, value: ComponentChildren, testId?: string];

/** A definition list of facts; `false` entries (facts that do not apply) are left out. */
export function Facts(props: { items: (Fact | false)[] }) {
  return (
    <dl class="facts">
      {props.items
        .filter((f): f is Fact => f !== false)
        .map(([label, value, testId]) => [
          <dt key={`${label}-t`}>{label}</dt>,
          <dd key={`${label}-d`} data-testid={testId}>
            {value}
          </dd>,
        ])}
    </dl>
  );
}

/** The way from a detail page back to its list. */
export const BackLink = (props: { href: string; children: string }) => (
  <p>
    <a href={props.href}>← {props.children}</a>
  </p>
);

/** Loads a list or page again on request (sections' header actions). */
export const RefreshButton = (props: { onRefresh: () => Promise<unknown>; busy?: boolean }) => (
  <button type="button" class="secondary" onClick={() => void props.onRefresh()} disabled={props.busy}>
    Refresh
  </button>
);

export function Badge(props: { tone?: 'ok' | 'bad' | 'warn' | 'info' | 'muted'; children: ComponentChildren }) {
  return <span class={`badge ${props.tone ?? 'muted'}`}>{props.children}</span>;
}

/** A confirmation opened by its caller: runs `onConfirm`, shows its error inside, closes on success. Lists
 * with a confirmation per row open one of these from each row's button (one dialog, not one per row). */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  confirm: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  children?: ComponentChildren;
  danger?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    if (props.open) setError(null);
  }, [props.open]);
  return (
    <Dialog open={props.open} title={props.title} onClose={props.onClose}>
      {props.children}
      <ErrorNotice error={error} />
      <div class="actions">
        <button
          type="button"
          class={props.danger ? 'danger' : 'primary'}
          disabled={busy}
          onClick={async () => {
            setBusy(true);
            setError(null);
            try {
              await props.onConfirm();
              props.onClose();
            } catch (e) {
              setError(asApiError(e));
            } finally {
              setBusy(false);
            }
          }}
        >
          {busy ? 'Working…' : props.confirm}
        </button>
        {/* For destructive actions the dialog opens on Cancel: Enter must not delete by accident. */}
        <button type="button" class="secondary" autoFocus={props.danger} onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

/** A button that opens a confirmation, runs `onConfirm`, and shows its error inside the dialog. In a table row,
 * `what` names the row's object: the button reads "Revoke <what>" to a screen reader and asks "Revoke <what>?". */
export function ConfirmButton(props: {
  label: string;
  what?: string;
  title?: string;
  confirm: string;
  onConfirm: () => Promise<void>;
  children?: ComponentChildren;
  danger?: boolean;
  small?: boolean;
}) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        class={`${props.danger ? 'danger' : 'secondary'}${props.small ? ' small' : ''}`}
        aria-label={props.what && `${props.label} ${props.what}`}
        onClick={() => setOpen(true)}
      >
        {props.label}
      </button>
      <ConfirmDialog
        open={open}
        title={props.title ?? `${props.label} ${props.what ?? ''}?`}
        confirm={props.confirm}
        onConfirm={props.onConfirm}
        onClose={() => setOpen(false)}
        danger={props.danger}
      >
        {props.children}
      </ConfirmDialog>
    </>
  );
}
