// Schedules with the real z4j scheduler adapters from PyPI, against the
// compiled dist/svc: Celery beat (z4j-celerybeat) and rq-scheduler
// (z4j-rqscheduler), each with a worker whose own agent reports what runs.
// svc activates each scheduler agent's external-schedule stream; the
// schedules the adapters then report appear in svc's API. Trigger-now from
// svc runs the task on the worker (a beat entry due only hourly, so the run
// seen is the triggered one); disable from svc reaches the beat agent, which
// refuses it for a static beat_schedule entry (read-only to z4j-celerybeat),
// and beat's next snapshot restores the entry; disable from svc pauses the
// rq-scheduler job in Redis (the scheduler's own next snapshot says so, and
// its runs stop); trigger-now enqueues an rq job the worker runs. A beat
// stopped past the grace produces a misfire row, a `scheduler.misfire_detected`
// audit row, a schedule.misfired inbox row and a line of `svc misfires` (the
// binary run against the test service's own installation).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { eventually, runSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { APP_ROOT, World, venvBin, type Proc } from './harness.ts';

const world = new World();
const GRACE = 5;

interface Cell {
  agentId: string;
  proc: Proc;
  worker: Proc;
}
const cells: Record<string, Cell> = {};

async function start(app: string, venv: string, scheduler: (bin: string, home: string) => string[], worker: (bin: string, name: string) => string[], workerEnv: (broker: string) => Record<string, string> = () => ({})): Promise<Cell> {
  const bin = venvBin(venv);
  const cwd = join(APP_ROOT, app);
  const broker = world.redisUrl();
  const env = { INTEROP_BROKER_URL: broker, PYTHONUNBUFFERED: '1' };
  const name = `control-${app}`;
  const agent = await world.mint(name);
  const home = tempDir(`z4j-control-${app}-`);
  const proc = world.spawn(scheduler(bin, home), cwd, { ...env, ...world.agentEnv(agent, 'ws', name, home) });
  const workerAgent = await world.mint(`${name}-worker`);
  const workerHome = tempDir(`z4j-control-${app}-worker-`);
  const w = world.spawn(worker(bin, `${name}-worker`), cwd, { ...env, ...workerEnv(broker), ...world.agentEnv(workerAgent, 'ws', `${name}-worker`, workerHome) });
  await world.waitOnline(agent.id, proc);
  await world.waitOnline(workerAgent.id, w);
  return { agentId: agent.id, proc, worker: w };
}

beforeAll(async () => {
  await world.start({
    SVC_SCHEDULER_MISFIRE_GRACE_SECONDS: String(GRACE),
    SVC_SCHEDULER_MISFIRE_SWEEP_SECONDS: '1',
    SVC_AGENT_OFFLINE_TIMEOUT_SECONDS: '15', // above the agents' 10 s heartbeat
  });
  const project = (await world.api.call('GET', '/api/v1/projects/default')).body;
  expect((await world.api.call('POST', '/api/v1/user/subscriptions', { project_id: project.id, trigger: 'schedule.misfired', in_app: true })).status).toBe(201);
  const [beat, rq] = await Promise.all([
    start(
      'celerybeat',
      'celery',
      (bin, home) => [join(bin, 'celery'), '-A', 'periodic', 'beat', '-l', 'info', '-s', join(home, 'celerybeat-schedule')],
      (bin, name) => [join(bin, 'celery'), '-A', 'periodic', 'worker', '--pool', 'threads', '--concurrency', '2', '-l', 'info', '-n', `${name}@%h`],
    ),
    start(
      'rqscheduler',
      'rqscheduler',
      (bin) => [join(bin, 'python'), 'scheduler.py'],
      (bin, name) => [join(bin, 'rq'), 'worker', '-c', 'worker_settings', '-w', 'z4j_rq.worker.Worker', '-n', name, '--logging_level', 'INFO', 'default'],
      (broker) => ({ Z4J_RQ_REDIS_URL: broker }),
    ),
  ]);
  cells.beat = beat;
  cells.rq = rq;
}, 150_000);

afterAll(() => world.stop(), 60_000);

const schedulesOf = async (scheduler: string): Promise<any[]> => {
  const res = await world.api.call('GET', `/api/v1/projects/default/schedules?scheduler=${scheduler}&limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
};
const withLogs = (cell: Cell) => (e: unknown) => {
  throw new Error(`${(e as Error).message}\nscheduler log tail:\n${cell.proc.tail(3000)}\nworker log tail:\n${cell.worker.tail(2000)}`);
};
const successes = async (engine: string, name: string): Promise<number> => {
  const res = await world.api.call('GET', `/api/v1/projects/default/tasks?engine=${engine}&name=${encodeURIComponent(name)}&state=success&limit=200`);
  return res.body.items.filter((t: any) => t.name === name).length;
};

describe('Celery beat (z4j-celerybeat)', () => {
  test('its schedules appear in svc, reported by the beat agent', async () => {
    await eventually(async () => (await schedulesOf('celery-beat')).length === 3, 30_000, 'three celery-beat schedules').catch(withLogs(cells.beat!));
    const rows = await schedulesOf('celery-beat');
    expect(rows.map((r) => [r.name, r.task_name, r.kind, r.engine, r.agent_id])).toEqual([
      ['interop-beat-add', 'interop.beat.add', 'interval', 'celery', cells.beat!.agentId],
      ['interop-beat-hourly', 'interop.beat.hourly', 'interval', 'celery', cells.beat!.agentId],
      ['interop-beat-tick', 'interop.beat.tick', 'interval', 'celery', cells.beat!.agentId],
    ]);
    expect(rows[0].args).toEqual([2, 3]);
    expect(rows.every((r) => r.is_enabled && r.external_id?.startsWith('static:'))).toBe(true);
  }, 45_000);

  test('trigger now from svc runs the task on the worker, and the fire is in the schedule history', async () => {
    const hourly = (await schedulesOf('celery-beat')).find((r) => r.name === 'interop-beat-hourly');
    expect(await successes('celery', 'interop.beat.hourly')).toBe(0);
    const res = await world.api.call('POST', `/api/v1/projects/default/schedules/${hourly.id}/trigger`);
    expect(res.status).toBe(202);
    const cmd = await world.waitForCommand(cells.beat!.proc, res.body.command_id);
    expect(cmd).toMatchObject({ status: 'completed', action: 'schedule.trigger_now', agent_id: cells.beat!.agentId });
    await eventually(async () => (await successes('celery', 'interop.beat.hourly')) === 1, 30_000, 'the triggered interop.beat.hourly to run on the worker').catch(withLogs(cells.beat!));
    await eventually(async () => (await world.api.call('GET', `/api/v1/projects/default/schedules/${hourly.id}/fires`)).body[0]?.status === 'succeeded', 10_000, 'the fire to succeed');
    const fires = (await world.api.call('GET', `/api/v1/projects/default/schedules/${hourly.id}/fires`)).body;
    expect(fires[0]).toMatchObject({ action: 'schedule.trigger_now', command_id: res.body.command_id });
    // The next run did not move.
    expect((await world.api.call('GET', `/api/v1/projects/default/schedules/${hourly.id}`)).body.next_run_at).toBe(hourly.next_run_at);
  }, 60_000);

  test('disable from svc reaches the beat agent, which refuses it for a static beat_schedule entry; the next snapshot says what beat holds', async () => {
    // z4j-celerybeat can toggle entries only in a writable source (django-celery-beat's tables); the
    // static beat_schedule of a plain Celery app is read-only. svc flips its record at once and sends
    // schedule.disable; the agent's answer and the scheduler's own next snapshot are what count.
    const add = (await schedulesOf('celery-beat')).find((r) => r.name === 'interop-beat-add');
    const res = await world.api.call('POST', `/api/v1/projects/default/schedules/${add.id}/disable`);
    expect(res.status).toBe(200);
    expect(res.body.schedule.is_enabled).toBe(false);
    const cmd = await world.waitForCommand(cells.beat!.proc, res.body.command_id);
    expect(cmd).toMatchObject({ status: 'failed', action: 'schedule.disable', agent_id: cells.beat!.agentId });
    // Addressed by the scheduler's own id of the entry; no writable source holds it.
    expect(cmd.error).toBe(`could not toggle schedule '${add.external_id}'`);
    // The beat keeps firing it, and its next snapshot (resync) puts the entry back as enabled.
    expect((await world.api.call('POST', '/api/v1/projects/default/schedules/resync')).status).toBe(202);
    await eventually(async () => (await schedulesOf('celery-beat')).find((r) => r.name === 'interop-beat-add')?.is_enabled === true, 20_000, 'the snapshot to report interop-beat-add enabled').catch(withLogs(cells.beat!));
    const before = await successes('celery', 'interop.beat.add');
    await eventually(async () => (await successes('celery', 'interop.beat.add')) > before, 20_000, 'interop.beat.add to keep running').catch(withLogs(cells.beat!));
  }, 60_000);
});

describe('rq-scheduler (z4j-rqscheduler)', () => {
  test('its schedules appear in svc, reported by the scheduler agent', async () => {
    await eventually(async () => (await schedulesOf('rq-scheduler')).length === 2, 30_000, 'two rq-scheduler schedules').catch(withLogs(cells.rq!));
    const rows = await schedulesOf('rq-scheduler');
    expect(rows.map((r) => [r.external_id, r.task_name, r.kind, r.expression, r.engine, r.is_enabled]).sort()).toEqual([
      ['interop-rq-add', 'jobs.add', 'interval', '3', 'rq', true],
      ['interop-rq-tick', 'jobs.tick', 'interval', '2', 'rq', true],
    ]);
  }, 45_000);

  test('disable from svc pauses the job in rq-scheduler: its next snapshot says so and the job stops running', async () => {
    const tick = (await schedulesOf('rq-scheduler')).find((r) => r.external_id === 'interop-rq-tick');
    // Running before.
    const taskRuns = async () => ((await world.task('rq', 'interop-rq-tick'))?.events ?? []).filter((e: any) => e.kind === 'task.succeeded').length;
    await eventually(async () => (await taskRuns()) >= 1, 30_000, 'interop-rq-tick to have run').catch(withLogs(cells.rq!));
    const res = await world.api.call('POST', `/api/v1/projects/default/schedules/${tick.id}/disable`);
    expect(res.status).toBe(200);
    expect(res.body.schedule.is_enabled).toBe(false);
    const cmd = await world.waitForCommand(cells.rq!.proc, res.body.command_id);
    expect(cmd).toMatchObject({ status: 'completed', action: 'schedule.disable' });
    // The scheduler's own account: a fresh snapshot (resync) reports it paused.
    expect((await world.api.call('POST', '/api/v1/projects/default/schedules/resync')).status).toBe(202);
    await eventually(async () => (await schedulesOf('rq-scheduler')).find((r) => r.external_id === 'interop-rq-tick')?.reported_at !== tick.reported_at, 20_000, 'a new snapshot').catch(withLogs(cells.rq!));
    const after = (await schedulesOf('rq-scheduler')).find((r) => r.external_id === 'interop-rq-tick');
    expect(after).toMatchObject({ is_enabled: false, next_run_at: null });
    // And it no longer runs (the other job still does).
    await Bun.sleep(3000);
    const settled = await taskRuns();
    await Bun.sleep(6000);
    expect(await taskRuns()).toBe(settled);
    expect(((await world.task('rq', 'interop-rq-add'))?.events ?? []).filter((e: any) => e.kind === 'task.succeeded').length).toBeGreaterThan(0);
    // Enabled again from svc, it resumes.
    const on = await world.api.call('POST', `/api/v1/projects/default/schedules/${tick.id}/enable`);
    expect((await world.waitForCommand(cells.rq!.proc, on.body.command_id)).status).toBe('completed');
    await eventually(async () => (await taskRuns()) > settled, 20_000, 'interop-rq-tick to run again').catch(withLogs(cells.rq!));
  }, 90_000);

  test('trigger now from svc enqueues the job at once through rq-scheduler; the worker runs it and the fire is in the history', async () => {
    const add = (await schedulesOf('rq-scheduler')).find((r) => r.external_id === 'interop-rq-add');
    const res = await world.api.call('POST', `/api/v1/projects/default/schedules/${add.id}/trigger`);
    expect(res.status).toBe(202);
    const cmd = await world.waitForCommand(cells.rq!.proc, res.body.command_id);
    expect(cmd).toMatchObject({ status: 'completed', action: 'schedule.trigger_now', agent_id: cells.rq!.agentId });
    // The adapter names the job it enqueued: a job of its own, run by the worker (the RQ agent reports
    // jobs.add(2, 3) by its description; it sends no return values).
    const taskId = cmd.result?.task_id as string;
    expect(taskId).toBeTruthy();
    expect(taskId).not.toBe('interop-rq-add');
    const task = await world.waitForTask(cells.rq!.worker, 'rq', taskId, 'success', { name: 'jobs.add' });
    expect(task.events.find((e: any) => e.kind === 'task.succeeded')?.payload.description).toBe('jobs.add(2, 3)');
    await eventually(async () => (await world.api.call('GET', `/api/v1/projects/default/schedules/${add.id}/fires`)).body[0]?.status === 'succeeded', 10_000, 'the fire to succeed');
    const fires = (await world.api.call('GET', `/api/v1/projects/default/schedules/${add.id}/fires`)).body;
    expect(fires[0]).toMatchObject({ action: 'schedule.trigger_now', command_id: res.body.command_id, task_id: taskId });
  }, 60_000);
});

describe('misfires', () => {
  test('a beat stopped past the grace: a misfire row, an audit row, a notification and a line of `svc misfires`', async () => {
    const beat = cells.beat!;
    const tick = (await schedulesOf('celery-beat')).find((r) => r.name === 'interop-beat-tick');
    beat.proc.proc.kill('SIGTERM');
    await beat.proc.proc.exited;
    // Offline after 15 s of silence, then the grace: the detector (every second) records it.
    await eventually(
      async () => (await world.api.call('GET', '/api/v1/projects/default/schedules/misfires')).body.misfires.some((m: any) => m.schedule_id === tick.id),
      45_000,
      'a misfire of interop-beat-tick',
    );
    const list = (await world.api.call('GET', '/api/v1/projects/default/schedules/misfires')).body;
    const m = list.misfires.find((x: any) => x.schedule_id === tick.id);
    expect(m).toMatchObject({ name: 'interop-beat-tick', engine: 'celery', kind: 'interval', scheduler: 'celery-beat', grace_seconds: GRACE });
    expect(m.lateness_seconds).toBeGreaterThanOrEqual(GRACE);
    // Nothing of the hourly entry (not due) and nothing of rq-scheduler (alive).
    expect(list.misfires.filter((x: any) => x.scheduler !== 'celery-beat' || x.name === 'interop-beat-hourly')).toEqual([]);
    const rows = (await world.api.call('GET', '/api/v1/activity?limit=200&action_prefix=scheduler.')).body.items;
    expect(rows.some((r: any) => r.action === 'scheduler.misfire_detected' && r.target_id === tick.id)).toBe(true);
    await eventually(async () => (await world.api.call('GET', '/api/v1/user/notifications?limit=100')).body.items.some((n: any) => n.trigger === 'schedule.misfired' && n.title === 'Schedule misfired: interop-beat-tick'), 15_000, 'the inbox row');
    // The CLI, run against the service's own installation while it serves.
    const text = await runSvc(['misfires', '--project', 'default'], world.env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/SCHEDULE ID\s+DETECTED AT\s+NAME\s+ENGINE\s+KIND\s+LATENESS\s+GRACE/);
    expect(text.stdout).toContain(tick.id);
    expect(text.stdout).toMatch(new RegExp(`${tick.id}\\s+\\S+\\s+interop-beat-tick\\s+celery\\s+interval\\s+[\\d.]+s\\s+${GRACE}s`));
    const json = await runSvc(['misfires', '--project', 'default', '--json'], world.env);
    expect(JSON.parse(json.stdout).misfires.some((x: any) => x.schedule_id === tick.id)).toBe(true);
  }, 90_000);
});
