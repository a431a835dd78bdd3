// A button that opens a dialog holding one form; the dialog closes when the form succeeds.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Dialog } from './dialog.tsx';
import { Form, type Values } from './form.tsx';

export function FormDialog(props: {
  button: string;
  buttonClass?: string;
  ariaLabel?: string;
  title: string;
  submit: string;
  onSubmit: (v: Values) => Promise<void>;
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        class={props.buttonClass ?? 'secondary small'}
        aria-label={props.ariaLabel}
        onClick={() => setOpen(true)}
      >
        {props.button}
      </button>
      <Dialog open={open} title={props.title} onClose={() => setOpen(false)}>
        <Form
          submit={props.submit}
          onSubmit={async (v) => {
            await props.onSubmit(v);
            setOpen(false);
          }}
          actions={
            <button type="button" class="secondary" onClick={() => setOpen(false)}>
              Cancel
            </button>
          }
        >
          {props.children}
        </Form>
      </Dialog>
    </>
  );
}
