// Requests index.html starts before the dashboard's script has loaded (its inline script, boot.ts): the session,
// the projects and the first request of the page the tab opens on leave while the HTML is parsed instead of after
// the script has arrived and been evaluated (docs/benchmarks.md). The client hands each answer to the first GET of
// the same URL, once, and asks again itself when an early request failed; what the first page has not taken is
// dropped once it has rendered (main.tsx), so no later view is shown an old answer. The answers are kept read in
// full: taking one then waits for no further network task, so a page whose answers are in when the script has
// run renders its rows in the same frame as the page around them (one style, layout and paint instead of two).
import { ACCEPT_JSON, answerOf, apiUrl, type Answer, type ApiGet } from './url.ts';

declare global {
  interface Window {
    /** The early answers by URL, from index.html's inline script. */
    svcEarly?: Map<string, Promise<Answer>>;
  }
}

export function startEarly(requests: ApiGet[]): void {
  const early = new Map<string, Promise<Answer>>();
  for (const r of requests) {
    const url = apiUrl(...r);
    const answer = fetch(url, { headers: ACCEPT_JSON, credentials: 'same-origin' }).then(answerOf);
    // A failure is reported when the client asks again; left unhandled here it would only be console noise.
    answer.catch(() => {});
    early.set(url, answer);
  }
  window.svcEarly = early;
}

/** The early answer for a GET of `url`, handed out once. */
export function takeEarly(url: string): Promise<Answer> | undefined {
  const answer = window.svcEarly?.get(url);
  window.svcEarly?.delete(url);
  return answer;
}

/** Settles when every early answer not yet taken is in (or has failed); at once when there are none. */
export const earlyAnswersIn = (): Promise<unknown> => Promise.allSettled(window.svcEarly?.values() ?? []);

export function forgetEarly(): void {
  delete window.svcEarly;
}
