// A keyset-paged list as a titled section: a Refresh button, loading and error states, the empty state, and
// "Load more" below the rows.
import type { ComponentChildren } from 'preact';
import { plural } from '../lib/format.ts';
import type { Paged } from '../lib/use-paged.ts';
import { RefreshButton, Section } from './bits.tsx';
import { ErrorNotice } from './errors.tsx';
import { Table } from './table.tsx';

export function PagedSection<T>(props: {
  title: string;
  paged: Paged<T>;
  /** What one row is, for "Showing 100 tasks". */
  what: string;
  columns: string[];
  empty: ComponentChildren;
  row: (item: T) => ComponentChildren;
  /** More header buttons beside Refresh. */
  actions?: ComponentChildren;
  /** Replaces the row of column names (ui/table.tsx). */
  head?: ComponentChildren;
  /** Above the table, below the title (a bulk action bar). */
  before?: ComponentChildren;
  /** How the rows are ordered, for "there are more" (default: newest first). */
  orderNote?: string;
}) {
  const p = props.paged;
  return (
    <Section
      title={props.title}
      actions={
        props.actions ? (
          <div class="page-actions">
            <RefreshButton onRefresh={p.reload} />
            {props.actions}
          </div>
        ) : (
          <RefreshButton onRefresh={p.reload} />
        )
      }
    >
      {props.before}
      {!p.loaded ? (
        <p class="muted" aria-busy="true">
          Loading…
        </p>
      ) : (
        <>
          <ErrorNotice error={p.error} />
          {p.items.length === 0 ? (
            !p.error &&
            (p.hasMore ? (
              // Nothing found yet, but not everything was read (a filter the list checks row by row).
              <div class="actions">
                <span class="muted small" role="status">
                  None found among the {props.what}s read so far; there are more to look through.
                </span>
                <button type="button" class="secondary" onClick={() => void p.more()} disabled={p.loadingMore}>
                  {p.loadingMore ? 'Loading…' : 'Look further'}
                </button>
              </div>
            ) : (
              props.empty
            ))
          ) : (
            <>
              <Table columns={props.columns} head={props.head}>
                {p.items.map(props.row)}
              </Table>
              <div class="actions">
                <span class="muted small" role="status">
                  {`Showing ${plural(p.items.length, props.what)}${p.hasMore ? `, ${props.orderNote ?? 'newest first'}; there are more` : ''}.`}
                </span>
                {p.hasMore && (
                  <button type="button" class="secondary" onClick={() => void p.more()} disabled={p.loadingMore}>
                    {p.loadingMore ? 'Loading…' : 'Load more'}
                  </button>
                )}
              </div>
            </>
          )}
        </>
      )}
    </Section>
  );
}
