// The task list's search language (`q`), its translation into each database's
// full-text query syntax, and the highlights of an answer's matches.
//
// The user's text never reaches a query parser: it is cut into tokens (runs of
// letters and digits, case folded), the tokens the indexes hold, and the
// query is written from those tokens alone. So FTS5 and tsquery operators in
// `q` ("(:^&|!) are separators like any punctuation; only an unbalanced
// double quote, a prefix shorter than three characters or a `q` without a
// single letter or digit is refused (422).
//
//   word            tasks with that word (whole: `charge` finds charge_card, not charged)
//   two words       both, anywhere in the task
//   order-1234      the words adjacent and in order (`order 1234`)
//   "exact words"   the same, written as a phrase
//   charg*          words that start with it (three characters or more; costs more: every
//                   word of the index with that start is read)
//
// A `q` without spaces or quotes is also looked up as a task id: exactly, and
// (four characters or more) as the start of one; those tasks lead the first page.
import { validationFailed } from '../http/errors.ts';

export const MAX_QUERY_CHARS = 200;
const MAX_TERMS = 16;
const MAX_TOKENS = 32;
/** The shortest word matched as a prefix (a shorter one would read most of the index). */
const MIN_PREFIX = 3;
/** The shortest `q` also looked up as the start of task ids. */
export const MIN_ID_PREFIX = 4;

/** Words that must appear adjacent and in order; the last one a prefix when `prefix`. */
export interface SearchTerm {
  tokens: string[];
  prefix: boolean;
}

export interface ParsedSearch {
  terms: SearchTerm[];
  /** The whole `q` (without a trailing *), when it could be a task id (no spaces, no quotes). */
  taskId: string | null;
}

const TOKEN = /[\p{L}\p{N}]+/gu;

const refuse = (message: string) => validationFailed([{ location: 'query', path: '/q', message }]);

function termOf(text: string, prefix: boolean): SearchTerm | null {
  const tokens = [...text.matchAll(TOKEN)].map((m) => m[0].toLowerCase());
  if (tokens.length === 0) return null;
  if (prefix && tokens[tokens.length - 1]!.length < MIN_PREFIX) throw refuse(`a prefix (word*) needs at least ${MIN_PREFIX} letters or digits`);
  return { tokens, prefix };
}

/** Reads `q`; throws the 422 envelope for a `q` with nothing to search for, an unbalanced quote or a short prefix. */
export function parseSearch(q: string): ParsedSearch {
  const text = q.trim();
  if ([...text].length > MAX_QUERY_CHARS) throw refuse(`is longer than ${MAX_QUERY_CHARS} characters`);
  const pieces = text.split('"');
  if (pieces.length % 2 === 0) throw refuse('has an unbalanced double quote');
  const terms: SearchTerm[] = [];
  // Outside quotes (even pieces) each whitespace-separated chunk is a term, a prefix when it ends
  // with *; inside (odd pieces) the phrase, a prefix when a * follows its closing quote.
  pieces.forEach((piece, i) => {
    const quoted = i % 2 === 1;
    const chunks = quoted ? [piece] : piece.split(/\s+/);
    for (const chunk of chunks) {
      const term = termOf(chunk, quoted ? (pieces[i + 1] ?? '').startsWith('*') : /[\p{L}\p{N}]\*+$/u.test(chunk));
      if (term) terms.push(term);
    }
  });
  if (terms.length === 0) throw refuse('holds no letters or digits to search for');
  if (terms.length > MAX_TERMS) throw refuse(`holds more than ${MAX_TERMS} terms`);
  if (terms.reduce((n, t) => n + t.tokens.length, 0) > MAX_TOKENS) throw refuse(`holds more than ${MAX_TOKENS} words`);
  const id = text.replace(/\*$/, '');
  return { terms, taskId: pieces.length === 1 && !/\s/.test(text) && id !== '' ? id : null };
}

/** The FTS5 MATCH expression: each term a quoted string of tokens (letters and digits only). */
export const fts5Query = (s: ParsedSearch): string => s.terms.map((t) => `"${t.tokens.join(' ')}"${t.prefix ? '*' : ''}`).join(' AND ');

/** The to_tsquery('simple', ...) text: each term a phrase (<->) of quoted lexemes. */
export const tsQuery = (s: ParsedSearch): string =>
  s.terms.map((t) => `(${t.tokens.map((tok, i) => `'${tok}'${t.prefix && i === t.tokens.length - 1 ? ':*' : ''}`).join(' <-> ')})`).join(' & ');

// --- highlights ----------------------------------------------------------------

/** A field's matches: `text` is plain text (the field, or a window of it with "…" where cut);
 * `ranges` are [start, end) offsets into `text` in UTF-16 code units (JavaScript string indexes). */
export interface Highlight {
  field: 'task_id' | 'name' | 'exception' | 'args' | 'kwargs' | 'result';
  text: string;
  ranges: [number, number][];
}

const FIELDS: Highlight['field'][] = ['task_id', 'name', 'exception', 'args', 'kwargs', 'result'];
const WINDOW = 200;
const BEFORE = 60;

interface Token {
  start: number;
  end: number;
  word: string;
}

function tokensOf(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(TOKEN)) out.push({ start: m.index, end: m.index + m[0].length, word: m[0].toLowerCase() });
  return out;
}

function matchesIn(tokens: Token[], term: SearchTerm): [number, number][] {
  const out: [number, number][] = [];
  const n = term.tokens.length;
  for (let i = 0; i + n <= tokens.length; i++) {
    let ok = true;
    for (let j = 0; j < n && ok; j++) {
      const want = term.tokens[j]!;
      const got = tokens[i + j]!.word;
      ok = j === n - 1 && term.prefix ? got.startsWith(want) : got === want;
    }
    if (ok) out.push([tokens[i]!.start, tokens[i + n - 1]!.end]);
  }
  return out;
}

function merged(ranges: [number, number][]): [number, number][] {
  const sorted = [...ranges].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: [number, number][] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

/** At most WINDOW characters of `text` from a little before the first match; ranges moved to match. */
function windowed(text: string, ranges: [number, number][]): { text: string; ranges: [number, number][] } {
  if (text.length <= WINDOW) return { text, ranges };
  let from = Math.max(0, ranges[0]![0] - BEFORE);
  // Never cut a surrogate pair in two.
  if (from > 0 && /[\udc00-\udfff]/.test(text[from]!)) from--;
  let to = Math.min(text.length, from + WINDOW);
  if (to < text.length && /[\udc00-\udfff]/.test(text[to]!)) to++;
  const head = from > 0 ? '…' : '';
  const shift = head.length - from;
  const kept = ranges.filter(([s]) => s < to).map(([s, e]): [number, number] => [s + shift, Math.min(e, to) + shift]);
  return { text: `${head}${text.slice(from, to)}${to < text.length ? '…' : ''}`, ranges: kept };
}

const fieldText = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));

/** The matches of `search` in a task's searched fields (as the answer shows them), field by field. */
export function highlightsOf(task: Record<string, unknown>, search: ParsedSearch): Highlight[] {
  const out: Highlight[] = [];
  for (const field of FIELDS) {
    // args, kwargs and result as the answer shows them (JSON); the others as they are.
    const text = field === 'task_id' || field === 'name' || field === 'exception' ? (task[field] as string | null) : fieldText(task[field]);
    if (!text) continue;
    const ranges: [number, number][] = [];
    if (field === 'task_id') {
      // Ids match through their own index: as a whole, or by their start.
      const id = search.taskId;
      if (id !== null && (text === id || (id.length >= MIN_ID_PREFIX && text.startsWith(id)))) ranges.push([0, id.length]);
    } else {
      const tokens = tokensOf(text);
      for (const term of search.terms) ranges.push(...matchesIn(tokens, term));
    }
    if (ranges.length > 0) out.push({ field, ...windowed(text, merged(ranges)) });
  }
  return out;
}
