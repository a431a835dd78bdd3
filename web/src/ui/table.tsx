// A table that scrolls sideways on a narrow screen instead of squeezing its columns.
import type { ComponentChildren } from 'preact';
import type { Resource } from '../lib/use-resource.ts';
import { Loaded } from './bits.tsx';

/** `head` replaces the row of column names (sortable headers, a select-all box). */
export function Table(props: { columns: string[]; children: ComponentChildren; head?: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {props.head ??
              props.columns.map((c) => (
                <th key={c} scope="col">
                  {c}
                </th>
              ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A loaded list as a table, or its empty state when there is nothing to show. */
export function ListTable<T>(props: {
  resource: Resource<T[]>;
  columns: string[];
  empty?: ComponentChildren;
  row: (item: T) => ComponentChildren;
}) {
  return (
    <Loaded resource={props.resource}>
      {(list) => (list.length === 0 && props.empty ? props.empty : <Table columns={props.columns}>{list.map(props.row)}</Table>)}
    </Loaded>
  );
}
