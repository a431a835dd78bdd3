// `svc scheduler import --from` / `export --to`: other tools' ways of writing
// schedules, to and from svc's definitions.
//   json         svc's own: {"schedules": [{name, task_name, engine, kind, expression, timezone, queue,
//                args, kwargs, catch_up, priority, is_enabled}]} (a bare list is read too)
//   crontab      one schedule a line: `<five fields or @hourly...> <task name> [<JSON args>]`;
//                `CRON_TZ=<zone>` sets the zone of the lines after it; a `# name: <name>` line names
//                the next schedule (else the task name); the engine comes from --engine
//   celery-beat  Celery's beat_schedule as JSON: {"<name>": {"task", "schedule", "args", "kwargs",
//                "options": {"queue"}}} where schedule is seconds, a cron string, {"crontab": "..."},
//                Celery crontab fields {"minute", "hour", "day_of_week", "day_of_month",
//                "month_of_year"}, {"clocked": "<ISO instant>"} or {"solar": event, "lat", "lon"};
//                an entry's "timezone" (default UTC) is the cron zone
import type { WireSchedule } from './wire.ts';

export const TOOLS = ['json', 'crontab', 'celery-beat'] as const;
export type Tool = (typeof TOOLS)[number];

export interface Definition {
  name: string;
  task_name: string;
  engine: string;
  kind: string;
  expression: string;
  timezone?: string;
  queue?: string | null;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
  catch_up?: string;
  priority?: string;
  is_enabled?: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const FIELDS = ['name', 'task_name', 'engine', 'kind', 'expression', 'timezone', 'queue', 'args', 'kwargs', 'catch_up', 'priority', 'is_enabled'] as const;

function fromJson(text: string, engine?: string): Definition[] {
  const parsed: unknown = JSON.parse(text);
  const list = Array.isArray(parsed) ? parsed : isObj(parsed) && Array.isArray(parsed.schedules) ? parsed.schedules : null;
  if (!list) throw new Error('expected {"schedules": [...]} or a list');
  return list.map((e, i) => {
    if (!isObj(e)) throw new Error(`entry ${i} is not an object`);
    const d = Object.fromEntries(FIELDS.filter((k) => e[k] !== undefined).map((k) => [k, e[k]])) as unknown as Definition;
    if (!d.engine && engine) d.engine = engine;
    return d;
  });
}

function fromCrontab(text: string, engine?: string): Definition[] {
  if (!engine) throw new Error('--engine is required for crontab (which engine runs the tasks)');
  let tz = 'UTC';
  let name: string | null = null;
  const out: Definition[] = [];
  const used = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const named = /^#\s*name:\s*(.+)$/.exec(line);
    if (named) return void (name = named[1]!.trim());
    if (line.startsWith('#')) return;
    const zone = /^CRON_TZ\s*=\s*(\S+)$/.exec(line);
    if (zone) return void (tz = zone[1]!);
    if (/^[A-Z_][A-Z0-9_]*\s*=/.test(line)) return; // other variables (SHELL=, MAILTO=)
    const parts = line.split(/\s+/);
    const fieldCount = parts[0]!.startsWith('@') ? 1 : 5;
    if (parts.length < fieldCount + 1) throw new Error(`line ${i + 1}: expected "<schedule> <task name> [<JSON args>]"`);
    const expression = parts.slice(0, fieldCount).join(' ');
    const task = parts[fieldCount]!;
    const rest = parts.slice(fieldCount + 1).join(' ');
    let args: unknown[] = [];
    if (rest !== '') {
      try {
        const a = JSON.parse(rest);
        if (!Array.isArray(a)) throw new Error();
        args = a;
      } catch {
        throw new Error(`line ${i + 1}: what follows the task name must be a JSON list of arguments`);
      }
    }
    let n = name ?? task;
    for (let k = 2; used.has(n); k++) n = `${name ?? task}-${k}`;
    used.add(n);
    name = null;
    out.push({ name: n, task_name: task, engine, kind: 'cron', expression, timezone: tz, args });
  });
  return out;
}

const CELERY_FIELDS = ['minute', 'hour', 'day_of_month', 'month_of_year', 'day_of_week'] as const;

function fromCeleryBeat(text: string, engine = 'celery'): Definition[] {
  const parsed: unknown = JSON.parse(text);
  if (!isObj(parsed)) throw new Error('expected a JSON object of beat_schedule entries');
  return Object.entries(parsed).map(([name, e]) => {
    if (!isObj(e) || typeof e.task !== 'string') throw new Error(`${name}: an entry needs "task"`);
    const sched = e.schedule;
    let kind: string;
    let expression: string;
    if (typeof sched === 'number') [kind, expression] = ['interval', String(sched)];
    else if (typeof sched === 'string') [kind, expression] = /^\d+(\.\d+)?$/.test(sched) ? ['interval', sched] : ['cron', sched];
    else if (isObj(sched) && typeof sched.crontab === 'string') [kind, expression] = ['cron', sched.crontab];
    else if (isObj(sched) && CELERY_FIELDS.some((f) => sched[f] !== undefined)) [kind, expression] = ['cron', CELERY_FIELDS.map((f) => String(sched[f] ?? '*')).join(' ')];
    else if (isObj(sched) && typeof sched.clocked === 'string') [kind, expression] = ['clocked', sched.clocked];
    else if (isObj(sched) && typeof sched.solar === 'string') [kind, expression] = ['solar', `${sched.solar} ${sched.lat} ${sched.lon}`];
    else throw new Error(`${name}: cannot read its schedule`);
    const options = isObj(e.options) ? e.options : {};
    return {
      name,
      task_name: e.task,
      engine,
      kind,
      expression,
      timezone: typeof e.timezone === 'string' ? e.timezone : 'UTC',
      queue: typeof options.queue === 'string' ? options.queue : null,
      args: Array.isArray(e.args) ? e.args : [],
      kwargs: isObj(e.kwargs) ? e.kwargs : {},
      ...(typeof e.enabled === 'boolean' ? { is_enabled: e.enabled } : {}),
    };
  });
}

export function fromTool(tool: Tool, text: string, opts: { engine?: string } = {}): Definition[] {
  if (tool === 'json') return fromJson(text, opts.engine);
  if (tool === 'crontab') return fromCrontab(text, opts.engine);
  return fromCeleryBeat(text, opts.engine);
}

export function toTool(tool: Tool, rows: WireSchedule[]): string {
  if (tool === 'json') {
    const schedules = rows.map((r) => ({ project: r.project_slug, ...Object.fromEntries(FIELDS.map((k) => [k, r[k]])) }));
    return `${JSON.stringify({ schedules }, null, 2)}\n`;
  }
  if (tool === 'crontab') {
    const lines = ['# svc scheduler export (crontab): <schedule> <task name> <JSON args>'];
    let tz = 'UTC';
    for (const r of rows) {
      if (r.kind !== 'cron') {
        lines.push(`# skipped ${r.name}: ${r.kind} schedules have no crontab form`);
        continue;
      }
      if (r.timezone !== tz) lines.push(`CRON_TZ=${(tz = r.timezone)}`);
      lines.push(`# name: ${r.name}`, `${r.expression} ${r.task_name}${r.args.length > 0 ? ` ${JSON.stringify(r.args)}` : ''}`);
    }
    return `${lines.join('\n')}\n`;
  }
  const out: Record<string, unknown> = {};
  for (const r of rows) {
    let schedule: unknown;
    if (r.kind === 'interval') schedule = Number(r.expression);
    else if (r.kind === 'cron') {
      const f = r.expression.trim().split(/\s+/);
      schedule = f.length === 5 ? Object.fromEntries(CELERY_FIELDS.map((k, i) => [k, f[i]])) : { crontab: r.expression };
    } else if (r.kind === 'clocked') schedule = { clocked: r.expression };
    else {
      const [event, lat, lon] = r.expression.trim().split(/[\s,]+/);
      schedule = { solar: event, lat: Number(lat), lon: Number(lon) };
    }
    out[r.name] = { task: r.task_name, schedule, args: r.args, kwargs: r.kwargs, options: r.queue ? { queue: r.queue } : {}, timezone: r.timezone, enabled: r.is_enabled };
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}
