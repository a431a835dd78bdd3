// Secrets the server shows once (API keys, invitation links, recovery codes): visible, copyable, downloadable,
// with a plain warning that they will not be shown again.
import { useState } from 'preact/hooks';

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No async clipboard (plain http on a LAN address is not a secure context): the old way.
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}

export function CopyButton(props: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const label = props.label ?? 'Copy';
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => setState((await copyText(props.text)) ? 'copied' : 'failed')}
      onBlur={() => setState('idle')}
    >
      <span aria-live="polite">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text' : label}
      </span>
    </button>
  );
}

export function DownloadLink(props: { text: string; filename: string; label: string }) {
  return (
    <a
      class="button secondary"
      href={`data:text/plain;charset=utf-8,${encodeURIComponent(props.text)}`}
      download={props.filename}
    >
      {props.label}
    </a>
  );
}

/** A value shown once: the warning, the value in a selectable box and a copy button. */
export function SecretOnce(props: { label: string; value: string; note?: string; testId?: string }) {
  return (
    <div class="secret">
      <p class="warn">
        <strong>{props.label}</strong> — {props.note ?? 'copy it now: it will not be shown again.'}
      </p>
      <div class="secret-row">
        <code class="secret-value" data-testid={props.testId} tabIndex={0}>
          {props.value}
        </code>
        <CopyButton text={props.value} />
      </div>
    </div>
  );
}
