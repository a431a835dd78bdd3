// A page that throws while rendering shows a message and a way back, never a blank screen.
import type { ComponentChildren } from 'preact';
import { useEffect, useErrorBoundary } from 'preact/hooks';

export function PageBoundary(props: { children: ComponentChildren; resetKey: string }) {
  const [error, reset] = useErrorBoundary((e) => console.error('dashboard page failed', e));
  useEffect(() => {
    if (error) reset();
    // Only a change of page clears the error; `error` itself must not.
  }, [props.resetKey]);
  if (!error) return <>{props.children}</>;
  return (
    <div class="notice error" role="alert">
      <p>
        <strong>This page failed to show.</strong> {error instanceof Error ? error.message : String(error)}
      </p>
      <p>
        <button type="button" class="secondary" onClick={() => location.reload()}>
          Reload
        </button>{' '}
        or go to <a href="/projects">your projects</a>.
      </p>
    </div>
  );
}
