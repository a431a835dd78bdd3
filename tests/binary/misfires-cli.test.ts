// `svc misfires --project <slug> [--limit <n>] [--json]` of the compiled binary:
// the table and the JSON, newest first, --limit's default (50) and cap (1000),
// exit 0 also when there is none, exit 2 for a malformed slug, an unknown
// project, an unreachable database and bad usage. The misfire rows are written
// into the installation's database directly (what the detector would write).
import { beforeAll, describe, expect, test } from 'bun:test';
import { Database } from 'bun:sqlite';
import { join } from 'node:path';
import { cleanEnv, runSvc } from '../helpers/binary.ts';

const env = cleanEnv({ SVC_ARGON2_MEMORY_KIB: '8192', SVC_ARGON2_TIME_COST: '1', SVC_ARGON2_PARALLELISM: '1' });
const ROWS = 1100;
let newest: { schedule_id: string; detected_at: string };

beforeAll(async () => {
  const boot = await runSvc(['createsuperuser', '--email', 'admin@example.com', '--password-stdin'], env, { stdin: 'Correct-Horse-Battery-9\n' });
  expect(boot.code).toBe(0);
  const db = new Database(join(env.SVC_HOME!, 'svc.db'));
  const project = db.query<{ id: string }, []>(`SELECT id FROM projects WHERE slug = 'default'`).get()!;
  const insert = db.prepare(
    `INSERT INTO schedule_misfires (id, project_id, schedule_id, scheduler, name, engine, kind, expected_at, detected_at, lateness_seconds, grace_seconds) VALUES (?, ?, ?, 'celery-beat', ?, 'celery', 'interval', ?, ?, ?, 60)`,
  );
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, 0) + i * 60_000).toISOString().replace('Z', '000+00:00');
      const id = crypto.randomUUID();
      insert.run(crypto.randomUUID(), project.id, id, `job-${i}`, at, at, 60.5 + i);
      newest = { schedule_id: id, detected_at: at };
    }
  })();
  db.close();
}, 60_000);

describe('svc misfires', () => {
  test('a table of schedule id, detected-at, name, engine, kind, lateness and grace, newest first, 50 by default', async () => {
    const r = await runSvc(['misfires', '--project', 'default'], env);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SCHEDULE ID\s+DETECTED AT\s+NAME\s+ENGINE\s+KIND\s+LATENESS\s+GRACE$/);
    expect(lines).toHaveLength(51);
    expect(lines[1]).toMatch(new RegExp(`^${newest.schedule_id}\\s+${newest.detected_at.replace(/[+.]/g, '\\$&')}\\s+job-${ROWS - 1}\\s+celery\\s+interval\\s+${(60.5 + ROWS - 1).toFixed(3).replace('.', '\\.')}s\\s+60s$`));
    expect(lines[2]).toContain(`job-${ROWS - 2}`);
  });

  test('--json gives the project and its misfires; --limit picks how many, capped at 1000', async () => {
    const r = await runSvc(['misfires', '--project', 'default', '--json', '--limit', '3'], env);
    expect(r.code).toBe(0);
    const body = JSON.parse(r.stdout);
    expect(body.project).toBe('default');
    expect(body.misfires.map((m: any) => m.name)).toEqual([`job-${ROWS - 1}`, `job-${ROWS - 2}`, `job-${ROWS - 3}`]);
    expect(Object.keys(body.misfires[0]).sort()).toEqual(['detected_at', 'engine', 'expected_at', 'grace_seconds', 'id', 'kind', 'lateness_seconds', 'name', 'schedule_id', 'scheduler']);
    expect(JSON.parse((await runSvc(['misfires', '--project', 'default', '--json'], env)).stdout).misfires).toHaveLength(50);
    expect(JSON.parse((await runSvc(['misfires', '--project', 'default', '--json', '--limit', '5000'], env)).stdout).misfires).toHaveLength(1000);
    expect(JSON.parse((await runSvc(['misfires', '--project=default', '--json', '--limit=1000'], env)).stdout).misfires).toHaveLength(1000);
  });

  test('a project without misfires: exit 0', async () => {
    const db = new Database(join(env.SVC_HOME!, 'svc.db'));
    const now = new Date().toISOString();
    db.run(`INSERT INTO projects (id, slug, name, description, is_active, created_at, updated_at) VALUES (?, 'quiet', 'Quiet', '', 1, ?, ?)`, [crypto.randomUUID(), now, now]);
    db.close();
    const r = await runSvc(['misfires', '--project', 'quiet'], env);
    expect(r).toMatchObject({ code: 0, stdout: 'no misfires in project quiet\n' });
    expect(JSON.parse((await runSvc(['misfires', '--project', 'quiet', '--json'], env)).stdout)).toEqual({ project: 'quiet', misfires: [] });
  });

  test('exit 2: malformed slug, unknown project, unreachable database, bad usage', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['misfires', '--project', 'Not_A_Slug!'], env, /not a project slug/],
      [['misfires', '--project', 'no-such-project'], env, /no project no-such-project/],
      [['misfires', '--project', 'default'], { ...env, SVC_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: '2' }, /database/],
      [['misfires', '--project', 'default'], { ...cleanEnv(), SVC_DATABASE_URL: `sqlite:${join(env.SVC_HOME!, 'missing', 'none.db')}` }, /database/],
      [['misfires'], env, /--project/],
      [['misfires', '--project', 'default', '--limit', 'many'], env, /--limit/],
      [['misfires', '--project', 'default', '--limit', '0'], env, /--limit/],
      [['misfires', '--project', 'default', '--bogus'], env, /bogus/],
    ];
    for (const [args, e, message] of cases) {
      const r = await runSvc(args, e);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });

  test('--help describes it', async () => {
    const r = await runSvc(['misfires', '--help'], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--limit <n>');
    expect(r.stdout).toContain('--json');
  });
});
