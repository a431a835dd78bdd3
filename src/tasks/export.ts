// Exports of a task filter, streamed a page at a time (never built in memory):
// CSV (RFC 4180: every text cell quoted, quotes doubled, CRLF line ends) and
// NDJSON (one task object per line). Spreadsheets run a cell that starts with
// = + - @ (or a tab or carriage return) as a formula, so such text cells get a
// leading apostrophe: an export opened in one shows the text, never runs it.
import type { Executor } from '../db/connect.ts';
import { logger } from '../lib/log.ts';
import { tasksOfFilter, type TaskQuery } from './explorer.ts';
import type { TaskPublic } from './schemas.ts';
import { toTaskPublic, type TaskRow } from './service.ts';

const log = logger('tasks.export');

/** The most rows one export holds (the `limit` query parameter lowers it). */
export const EXPORT_MAX_ROWS = 100_000;

export const EXPORT_FIELDS = [
  'id', 'engine', 'task_id', 'name', 'queue', 'state', 'priority', 'worker_name', 'retry_count', 'eta', 'received_at', 'started_at', 'finished_at',
  'runtime_ms', 'parent_task_id', 'root_task_id', 'tags', 'args', 'kwargs', 'result', 'exception', 'traceback', 'created_at', 'updated_at',
] as const satisfies readonly (keyof TaskPublic)[];
export type ExportField = (typeof EXPORT_FIELDS)[number];

const FORMULA = /^[=+\-@\t\r]/;

/** One CSV cell: text quoted (formula-looking text behind an apostrophe), numbers bare, null empty. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return String(value);
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  if (FORMULA.test(text)) text = `'${text}`;
  return `"${text.replaceAll('"', '""')}"`;
}

export const csvLine = (cells: unknown[]): string => `${cells.map(csvCell).join(',')}\r\n`;

export type ExportFormat = 'csv' | 'ndjson';

export const EXPORT_MEDIA: Record<ExportFormat, string> = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson; charset=utf-8' };

/** The export of a filter as a byte stream. The first page is read before this returns: a query the
 * search refuses or a failing read throws here, so the route answers the error envelope instead of starting
 * a download. Later pages are read as the client takes them; a read failing then can only end the stream
 * broken (the status and headers are gone): it is logged, and the response stops without its end (no
 * last chunk), so the client sees a failed, truncated download, never a short file that looks complete. `done` runs once, when the stream has ended
 * in any way: read to the end, failed (the first page included), or cancelled (the client went away). */
export async function openExport(
  ex: Executor,
  projectId: string,
  q: Omit<TaskQuery, 'cursor' | 'limit'>,
  format: ExportFormat,
  fields: readonly ExportField[],
  max: number,
  done: () => void = () => {},
): Promise<ReadableStream<Uint8Array>> {
  const encoder = new TextEncoder();
  const pick = (t: TaskPublic) => Object.fromEntries(fields.map((f) => [f, t[f]]));
  const pages = tasksOfFilter(ex, projectId, q, max);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    done();
  };
  let next: IteratorResult<TaskRow[]> | null;
  try {
    next = await pages.next();
  } catch (err) {
    end();
    throw err;
  }
  let text = format === 'csv' ? csvLine([...fields]) : '';
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          next ??= await pages.next();
          if (!next.done) {
            for (const row of next.value) {
              const task = toTaskPublic(row);
              text += format === 'csv' ? csvLine(fields.map((f) => task[f])) : `${JSON.stringify(pick(task))}\n`;
            }
          }
          if (text !== '') controller.enqueue(encoder.encode(text));
          text = '';
          if (next.done) {
            controller.close();
            end();
          }
          next = null;
        } catch (err) {
          log.error({ err: String(err) }, 'task export failed after it started; the client gets a truncated download');
          controller.error(err);
          end();
        }
      },
      async cancel() {
        end();
        await pages.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
