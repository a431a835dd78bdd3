// The task page's tree: the chain, group or chord the task belongs to (GET .../tree), from its root down the
// parent links, the task itself marked; and its raw events as the agents reported them (GET .../events, paged).
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { TaskEventPage, TaskTree as Tree, TaskTreeNode } from '../../api/types.ts';
import { duration, plural } from '../../lib/format.ts';
import { usePaged } from '../../lib/use-paged.ts';
import { useResource } from '../../lib/use-resource.ts';
import { Loaded, Section, Time } from '../../ui/bits.tsx';
import { ErrorNotice } from '../../ui/errors.tsx';
import { jsonText } from '../../ui/json.tsx';
import { TaskStateBadge } from '../../ui/status.tsx';
import { taskHref } from './task-link.ts';

function Branch(props: { slug: string; engine: string; node: TaskTreeNode; childrenOf: Map<string, TaskTreeNode[]>; current: string }) {
  const { node } = props;
  const kids = props.childrenOf.get(node.task_id) ?? [];
  const me = node.task_id === props.current;
  return (
    <li>
      <span class={me ? 'tree-node current' : 'tree-node'}>
        {TaskStateBadge({ state: node.state })}{' '}
        {me ? (
          <strong aria-current="page">{node.name ?? node.task_id}</strong>
        ) : (
          <a href={taskHref(props.slug, { engine: props.engine, task_id: node.task_id })}>{node.name ?? node.task_id}</a>
        )}{' '}
        <code class="muted small">{node.task_id}</code>
        {node.runtime_ms !== null && <span class="muted small"> · {duration(node.runtime_ms)}</span>}
        {node.worker_name && <span class="muted small"> · {node.worker_name}</span>}
      </span>
      {kids.length > 0 && (
        <ul>
          {kids.map((k) => (
            <Branch key={k.task_id} {...props} node={k} />
          ))}
        </ul>
      )}
    </li>
  );
}

export function TaskTreeSection(props: { slug: string; engine: string; taskId: string; path: string }) {
  const tree = useResource(() => api.get<Tree>(`${props.path}/tree`), [props.path]);
  const t = tree.data;
  // A standalone task: its tree is itself (or nothing); a line says so instead of a card.
  if (t && t.node_count <= 1 && t.root_task_id === props.taskId)
    return <p class="muted small" data-testid="task-tree-none">This task is not part of a chain, group or chord.</p>;
  return (
    <Section title="Task tree">
      <Loaded resource={tree}>
        {(t) => {
          const ids = new Set(t.nodes.map((n) => n.task_id));
          const children = new Map<string, TaskTreeNode[]>();
          const tops: TaskTreeNode[] = [];
          for (const n of t.nodes) {
            if (n.parent_task_id && ids.has(n.parent_task_id) && n.task_id !== n.parent_task_id) {
              const list = children.get(n.parent_task_id) ?? [];
              list.push(n);
              children.set(n.parent_task_id, list);
            } else tops.push(n);
          }
          return (
            <>
              <p class="muted small">
                {`${plural(t.node_count, 'task')} in this tree`}
                {!ids.has(t.root_task_id) && (
                  <>
                    {'; its root '}
                    <code>{t.root_task_id}</code>
                    {' was never reported to svc'}
                  </>
                )}
                .
              </p>
              <ul class="tree" aria-label="Task tree">
                {tops.map((n) => (
                  <Branch key={n.task_id} slug={props.slug} engine={t.engine} node={n} childrenOf={children} current={props.taskId} />
                ))}
              </ul>
              {t.truncated && (
                <p class="notice warn small" role="status">
                  {`The tree is larger than shown: at most ${t.limits.max_depth} levels, ${t.limits.max_width} children per task and ${t.limits.max_nodes} tasks are read.`}
                </p>
              )}
            </>
          );
        }}
      </Loaded>
    </Section>
  );
}

function EventList(props: { path: string; order: 'asc' | 'desc'; nameOf: (id: string | null) => string }) {
  const paged = usePaged(
    (cursor) => api.get<TaskEventPage>(`${props.path}/events`, { order: props.order, cursor, limit: 100 }),
    [props.path, props.order],
  );
  if (!paged.loaded)
    return (
      <p class="muted" aria-busy="true">
        Loading…
      </p>
    );
  return (
    <>
      <ErrorNotice error={paged.error} />
      <ol class="raw-events" aria-label="Raw events">
        {paged.items.map((e) => (
          <li key={e.id}>
            <p class="small">
              <code class="feed-action">{e.kind}</code> <Time iso={e.occurred_at} /> <span class="muted">from {props.nameOf(e.agent_id)}</span>
            </p>
            <pre class="code-block" tabIndex={0} aria-label={`Raw event ${e.kind}`}>
              {jsonText(e)}
            </pre>
          </li>
        ))}
      </ol>
      {paged.hasMore && (
        <button type="button" class="secondary" onClick={() => void paged.more()} disabled={paged.loadingMore}>
          {paged.loadingMore ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}

/** The raw events, fetched when asked for (the timeline above has the same events, summarised). */
export function RawEvents(props: { path: string; count: number; more: boolean; nameOf: (id: string | null) => string }) {
  const [shown, setShown] = useState(false);
  const [order, setOrder] = useState<'asc' | 'desc'>('asc');
  return (
    <Section
      title="Raw events"
      actions={
        shown && (
          <select aria-label="Order of the raw events" onChange={(e) => setOrder((e.currentTarget as HTMLSelectElement).value as 'asc' | 'desc')}>
            <option value="asc" selected={order === 'asc'}>
              Oldest first
            </option>
            <option value="desc" selected={order === 'desc'}>
              Newest first
            </option>
          </select>
        )
      }
    >
      {shown ? (
        <EventList path={props.path} order={order} nameOf={props.nameOf} />
      ) : (
        <p>
          <span class="muted">{`Each of the ${props.more ? `${props.count}+ events` : plural(props.count, 'event')} exactly as the agents sent it (after their redaction). `}</span>
          <button type="button" class="secondary small" onClick={() => setShown(true)}>
            Show raw events
          </button>
        </p>
      )}
    </Section>
  );
}
