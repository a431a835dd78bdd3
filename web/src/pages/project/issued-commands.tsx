// The commands a page has just issued (worker actions, a purge, dead-letter requeues), each watched until the
// agent has answered: the live stream's command notices and, while any is open, a poll.
import { useState } from 'preact/hooks';
import { api } from '../../api/client.ts';
import type { Command } from '../../api/types.ts';
import { useLive } from '../../lib/live.ts';
import { usePoll } from '../../lib/use-poll.ts';
import { COMMAND_ENDED } from '../../ui/status.tsx';
import { Table } from '../../ui/table.tsx';
import { COMMAND_COLUMNS, commandRow } from './commands.tsx';
import { projectPath } from './requests.ts';

const WATCH_MS = 1000;

export interface Issued {
  list: Command[];
  add: (c: Command) => void;
}

export function useIssuedCommands(slug: string): Issued {
  const [list, setList] = useState<Command[]>([]);
  const open = list.filter((c) => !COMMAND_ENDED.has(c.status));
  const refresh = async () => {
    if (open.length === 0) return;
    const fresh = await Promise.all(open.map((c) => api.get<Command>(`${projectPath(slug)}/commands/${c.id}`).catch(() => c)));
    const byId = new Map(fresh.map((c) => [c.id, c]));
    setList((cur) => cur.map((c) => byId.get(c.id) ?? c));
  };
  useLive(slug, ['command'], (e) => (e.type === 'resync' || open.some((c) => e.more || e.ids.includes(c.id))) && refresh(), {
    fallbackMs: 0,
  });
  usePoll(refresh, WATCH_MS, open.length > 0);
  return { list, add: (c) => setList((cur) => [c, ...cur.filter((x) => x.id !== c.id)]) };
}

/** The issued commands as the commands table shows them, newest first; nothing before the first. */
export function IssuedCommands(props: { slug: string; issued: Issued; nameOf: (id: string | null) => string; title?: string }) {
  if (props.issued.list.length === 0) return null;
  return (
    <div class="issued" role="region" aria-label={props.title ?? 'Commands sent from this page'}>
      <h3>{props.title ?? 'Commands sent from this page'}</h3>
      <Table columns={COMMAND_COLUMNS}>{props.issued.list.map((c) => commandRow(props.slug, c, props.nameOf(c.agent_id)))}</Table>
    </div>
  );
}
