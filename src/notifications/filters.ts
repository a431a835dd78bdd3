// Subscription filters: which fires of a trigger reach a subscription. All
// given filters must match (AND): the task's priority is in `priority`, its
// name contains `task_name`, its name matches the fnmatch glob
// `task_name_pattern`. A fire without a task (agent.*, schedule.*) passes the
// task filters only when none is set. Globs are limited (length: the schema;
// wildcards, classes: here) so matching one can never be expensive.
import type { FieldError } from '../http/errors.ts';
import type { Filters } from './tables.ts';

export const MAX_GLOB_WILDCARDS = 5;
export const MAX_GLOB_CLASSES = 3;

interface GlobPart {
  regex: string;
  wildcard: boolean;
  cls: boolean;
}

/** Splits a glob into its parts, fnmatch's way: `*`, `?`, `[...]` / `[!...]` (an unclosed `[` is literal). */
function parts(glob: string): GlobPart[] {
  const out: GlobPart[] = [];
  let i = 0;
  while (i < glob.length) {
    const c = glob[i]!;
    if (c === '*' || c === '?') {
      out.push({ regex: c === '*' ? '.*' : '.', wildcard: true, cls: false });
      i++;
      continue;
    }
    if (c === '[') {
      let j = i + 1;
      if (glob[j] === '!') j++;
      if (glob[j] === ']') j++;
      while (j < glob.length && glob[j] !== ']') j++;
      if (j < glob.length) {
        let body = glob.slice(i + 1, j);
        const negate = body.startsWith('!');
        if (negate) body = body.slice(1);
        const escaped = body.replace(/[\\\]^]/g, '\\$&');
        out.push({ regex: `[${negate ? '^' : ''}${escaped}]`, wildcard: false, cls: true });
        i = j + 1;
        continue;
      }
    }
    out.push({ regex: c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), wildcard: false, cls: false });
    i++;
  }
  return out;
}

/** The filter rules a schema cannot state; each refusal names its rule. */
export function checkFilters(filters: Filters, path = '/filters'): FieldError[] {
  const errors: FieldError[] = [];
  const glob = filters.task_name_pattern;
  if (glob !== undefined) {
    const p = parts(glob);
    const wildcards = p.filter((x) => x.wildcard).length;
    const classes = p.filter((x) => x.cls).length;
    if (wildcards > MAX_GLOB_WILDCARDS) {
      errors.push({ path: `${path}/task_name_pattern`, message: `at most ${MAX_GLOB_WILDCARDS} * or ? wildcards (this has ${wildcards})`, code: 'glob_too_many_wildcards' });
    }
    if (classes > MAX_GLOB_CLASSES) {
      errors.push({ path: `${path}/task_name_pattern`, message: `at most ${MAX_GLOB_CLASSES} character classes (this has ${classes})`, code: 'glob_too_many_classes' });
    }
  }
  return errors;
}

const compiled = new Map<string, RegExp>();

/** fnmatchcase: the whole name, case-sensitive. */
export function globMatches(glob: string, name: string): boolean {
  let re = compiled.get(glob);
  if (!re) {
    re = new RegExp(`^${parts(glob).map((p) => p.regex).join('')}$`, 's');
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(glob, re);
  }
  return re.test(name);
}

/** What a fire says about its task, for the filters. */
export interface FireFacts {
  task_name: string | null;
  priority: string | null;
}

export function filtersMatch(filters: Filters, fire: FireFacts): boolean {
  if (filters.priority && filters.priority.length > 0 && (fire.priority === null || !(filters.priority as string[]).includes(fire.priority))) return false;
  if (filters.task_name !== undefined && (fire.task_name === null || !fire.task_name.includes(filters.task_name))) return false;
  if (filters.task_name_pattern !== undefined && (fire.task_name === null || !globMatches(filters.task_name_pattern, fire.task_name))) return false;
  return true;
}
