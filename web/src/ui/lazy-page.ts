// Pages most visits never open are chunks of their own (build.ts bundles with splitting), fetched when first
// shown, so the script every page load evaluates stays small (docs/benchmarks.md). A chunk that cannot be fetched
// (svc was upgraded while the tab was open and the old chunk is gone, or svc is unreachable) fails the page with a
// readable message in its PageBoundary instead of leaving the previous page on the screen.
import type { FunctionComponent } from 'preact';
import { lazy } from 'preact-iso';

export function lazyPage<P>(load: () => Promise<FunctionComponent<P>>): FunctionComponent<P> {
  return lazy(() =>
    load().catch((): FunctionComponent<P> => () => {
      throw new Error('Its code could not be fetched from svc (it may have been upgraded since this tab was opened).');
    }),
  );
}
