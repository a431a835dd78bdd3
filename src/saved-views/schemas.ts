// The shapes of the saved-view routes: the answer (as the OpenAPI document and the dashboard read it) and the
// request bodies. Every string has a maxLength (the OpenAPI fuzzing keeps request lines short).
import { Type, type Static } from '@sinclair/typebox';
import { Answer, Body, Timestamp, Uuid } from '../http/schemas.ts';

/** The pages that keep saved views. */
export const SAVED_VIEW_PAGES = ['tasks'] as const;
export type SavedViewPage = (typeof SAVED_VIEW_PAGES)[number];

/** Views one user may keep in one project (all pages together). */
export const MAX_VIEWS_PER_PROJECT = 50;
/** The longest query string a view keeps (4 KiB: ASCII, as a URL's query is). */
export const MAX_QUERY_LENGTH = 4096;

export const Page = Type.Union(
  SAVED_VIEW_PAGES.map((p) => Type.Literal(p)),
  { description: 'the dashboard page the view belongs to' },
);
// No control characters; no space at either end. Written without \s so that JavaScript and the fuzzer's regex
// engine agree on what matches.
const ViewName = Type.String({
  minLength: 1,
  maxLength: 60,
  pattern: '^[^\\x00-\\x20\\x7f]([^\\x00-\\x1f\\x7f]*[^\\x00-\\x20\\x7f])?$',
  description: 'unique per user, project and page; no control characters, no space at either end',
  examples: ['Slowest successes'],
});
const ViewQuery = Type.String({
  maxLength: MAX_QUERY_LENGTH,
  // Printable ASCII only, no leading `?`, no `#`: a URL's query as URLSearchParams writes it.
  pattern: '^([!"$->@-~][!"$-~]*)?$',
  description: "the page's query string (filters, search, sort) without the leading `?`; empty for the unfiltered page",
  examples: ['state=success&sort=runtime_ms&order=desc'],
});

export const SavedViewPublic = Answer(
  {
    id: Uuid,
    page: Page,
    name: Type.String(),
    query: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'SavedView',
);
export type SavedViewPublic = Static<typeof SavedViewPublic>;

export const NewSavedView = Body({ page: Page, name: ViewName, query: ViewQuery });
export type NewSavedView = Static<typeof NewSavedView>;

export const SavedViewPatch = Type.Object({ name: Type.Optional(ViewName), query: Type.Optional(ViewQuery) }, { additionalProperties: false, minProperties: 1 });
export type SavedViewPatch = Static<typeof SavedViewPatch>;
