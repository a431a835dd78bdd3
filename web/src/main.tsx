import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './styles.css';

declare const SVC_VERSION: string;

type Ready = { state: 'checking' } | { state: 'ready' } | { state: 'unready'; reason: string };

function useReadiness(): Ready {
  const [ready, setReady] = useState<Ready>({ state: 'checking' });
  useEffect(() => {
    let stop = false;
    const check = async () => {
      try {
        const res = await fetch('/api/v1/health/ready', { headers: { accept: 'application/json' } });
        const body = (await res.json()) as { reason?: string };
        if (!stop) setReady(res.ok ? { state: 'ready' } : { state: 'unready', reason: body.reason ?? `HTTP ${res.status}` });
      } catch {
        if (!stop) setReady({ state: 'unready', reason: 'service unreachable' });
      }
      if (!stop) setTimeout(check, 5000);
    };
    void check();
    return () => {
      stop = true;
    };
  }, []);
  return ready;
}

function App() {
  const ready = useReadiness();
  return (
    <main class="status">
      <h1>svc</h1>
      <p>Control plane for background-task workers.</p>
      <dl>
        <dt>Version</dt>
        <dd data-testid="version">{SVC_VERSION}</dd>
        <dt>Readiness</dt>
        <dd data-testid="readiness" class={ready.state}>
          {ready.state === 'checking' ? 'checking…' : ready.state === 'ready' ? 'ready' : `not ready (${ready.reason})`}
        </dd>
      </dl>
    </main>
  );
}

render(<App />, document.getElementById('app')!);
