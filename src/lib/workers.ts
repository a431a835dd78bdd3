// Where a worker thread's entry point lives. From source it is the .ts file;
// in the compiled binary every worker is an entry point of its own (listed in
// build.ts), embedded under the entry points' common folder (src/) as .js.
const COMPILED = import.meta.url.startsWith('file:///$bunfs/');

/** The entry point `src/<path>.ts`, e.g. workerEntry('audit/verify-worker'). */
export const workerEntry = (path: string): string => (COMPILED ? `/$bunfs/root/${path}.js` : new URL(`../${path}.ts`, import.meta.url).href);
