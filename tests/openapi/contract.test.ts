// The API contract, fuzzed: schemathesis (PyPI) reads /api/v1/openapi.json of
// the compiled dist/svc and sends generated requests as each kind of caller,
// checking that no answer is a server error, every status and body is the one
// the document declares for that operation, and content types match. Each run's
// HAR shows what it reached: a run whose credentials were refused throughout
// fails even when every refusal was a documented one. The routes that end or
// change the caller's own access (logout, password changes, role and
// membership changes, archiving, deletions) run in throw-away instances, logout
// last and alone, so the other runs keep their credentials. A test double whose
// answer breaks its declared schema shows the suite can fail.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../../src/http/contract.ts';
import { openapiContract, openapiDocument } from '../../src/http/openapi.ts';
import { Api } from '../helpers/api-client.ts';
import { cleanEnv, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

const VENVS = process.env.SVC_TEST_VENVS ?? join(import.meta.dir, '../../.venv');
const SCHEMATHESIS = join(VENVS, 'schemathesis/bin/schemathesis');
const CHECKS = 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance';
/** Examples per operation and the seed: fixed, so a run is repeatable (SVC_CONTRACT_SEED picks another).
 * One worker per run: schemathesis's threads hit a CPython 3.11 bug in ast.parse ("AST constructor recursion
 * depth mismatch", an internal error of the run, not a finding); runs go two at a time instead (LANES). */
const EXAMPLES = Number(process.env.SVC_CONTRACT_EXAMPLES ?? '12');
const SEED = process.env.SVC_CONTRACT_SEED ?? '20261126';

type Op = [method: string, path: string];
type Caller = 'anonymous' | 'viewer' | 'operator' | 'project_admin' | 'admin' | 'api_key';
const CALLERS: readonly Caller[] = ['anonymous', 'viewer', 'operator', 'project_admin', 'admin', 'api_key'];
const SESSION_CALLERS: readonly Caller[] = ['viewer', 'operator', 'project_admin', 'admin'];

/** How each caller is fuzzed. The coverage phase (boundary and malformed values of every input, some 6,800 requests)
 * is answered by the router's validation ahead of any access check, alike for every caller: it runs once, for the
 * global administrator, whose valid inputs also reach every handler. Anonymous callers and API keys are refused by
 * most operations after the same validation, so a third of the examples shows those refusals. */
const LIGHT = Math.max(1, Math.round(EXAMPLES / 3));
const PLAN: Record<Caller, { phases: string; examples: number }> = {
  anonymous: { phases: 'examples,fuzzing', examples: LIGHT },
  api_key: { phases: 'examples,fuzzing,stateful', examples: LIGHT },
  viewer: { phases: 'examples,fuzzing,stateful', examples: EXAMPLES },
  operator: { phases: 'examples,fuzzing,stateful', examples: EXAMPLES },
  project_admin: { phases: 'examples,fuzzing,stateful', examples: EXAMPLES },
  admin: { phases: 'examples,coverage,fuzzing,stateful', examples: EXAMPLES },
};

/** Two lanes run at once, each on instances of its own (one caller's settings and rate-limit buckets stay out of the
 * other lane); in a lane the runs follow each other, the caller who may change the most last. */
const LANES: readonly (readonly Caller[])[] = [
  ['anonymous', 'api_key', 'admin'],
  ['viewer', 'operator', 'project_admin'],
];

/** Operations each caller may call without a path parameter to guess: a run without a 2xx on them was refused. */
const REACHABLE: Record<Caller, Op[]> = {
  anonymous: [['GET', '/api/v1/health'], ['GET', '/api/v1/health/ready']],
  api_key: [['GET', '/api/v1/projects'], ['GET', '/api/v1/users']],
  viewer: [['GET', '/api/v1/auth/me'], ['GET', '/api/v1/projects']],
  operator: [['GET', '/api/v1/auth/me'], ['GET', '/api/v1/projects']],
  project_admin: [['GET', '/api/v1/auth/me'], ['GET', '/api/v1/projects']],
  admin: [['GET', '/api/v1/auth/me'], ['GET', '/api/v1/users']],
};

const LOGOUT: Op = ['POST', '/api/v1/auth/logout'];
/** Operations that end or change the caller's own access: fuzzed only in throw-away instances. */
const DESTRUCTIVE: Op[] = [
  LOGOUT,
  ['POST', '/api/v1/auth/change-password'],
  ['POST', '/api/v1/auth/sessions/{id}/revoke'],
  ['POST', '/api/v1/auth/mfa/disable'],
  ['PATCH', '/api/v1/users/{id}'],
  ['DELETE', '/api/v1/users/{id}'],
  ['POST', '/api/v1/users/{id}/password'],
  ['DELETE', '/api/v1/projects/{slug}'],
  ['PATCH', '/api/v1/projects/{slug}/memberships/{id}'],
  ['DELETE', '/api/v1/projects/{slug}/memberships/{id}'],
];
const name = ([m, p]: Op) => `${m} ${p}`;

interface Answer {
  /** `METHOD /path/{template}` of the document. */
  op: string;
  status: number;
}

interface Outcome {
  code: number;
  output: string;
  answers: Answer[];
  seconds: number;
  /** How the instance ended, when it did so during the run (no schemathesis finding then, a dead server). */
  svc?: string;
}

interface Doc {
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, { links?: Record<string, { operationId: string }> }> }>>;
}

/** The document's operation a request went to (the most literal template when several match). */
let operationOf: (method: string, path: string) => string;

function matcher(doc: Doc): typeof operationOf {
  const templates = Object.keys(doc.paths)
    .map((t) => ({ t, re: new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/]+')}$`), params: t.split('{').length }))
    .sort((a, b) => a.params - b.params);
  return (method, path) => `${method} ${templates.find((x) => x.re.test(path) && doc.paths[x.t]![method.toLowerCase()])?.t ?? path}`;
}

/** Runs schemathesis against `base` as the caller the headers make; `only` limits it to some operations. */
async function fuzzOn(target: RunningSvc, headers: Record<string, string>, plan: { phases: string; examples: number }, opts: { only?: Op[]; skip?: Op[] } = {}): Promise<Outcome> {
  const o = await fuzz(target.url, headers, plan, opts);
  if (target.proc.exitCode !== null || target.proc.signalCode !== null) {
    o.svc = `\nsvc ended (${target.proc.exitCode ?? target.proc.signalCode}); its stderr ends:\n${target.stderr().slice(-3000)}`;
  }
  return o;
}

async function fuzz(base: string, headers: Record<string, string>, plan: { phases: string; examples: number }, opts: { only?: Op[]; skip?: Op[] } = {}): Promise<Outcome> {
  // In a scratch directory: schemathesis keeps a cache of its findings in the working directory.
  const dir = tempDir('st-run-');
  const har = join(dir, 'run.har');
  const args = [SCHEMATHESIS, 'run', `${base}/api/v1/openapi.json`, '--checks', CHECKS, '--phases', plan.phases, '--max-examples', String(plan.examples)];
  args.push('--seed', SEED, '--no-shrink', '--workers', '1', '--report', 'har', '--report-har-path', har);
  for (const [k, v] of Object.entries(headers)) args.push('--header', `${k}: ${v}`);
  const exact = (ops: Op[]) => `^(${ops.map((op) => name(op).replace(/[{}]/g, '\\$&')).join('|')})$`;
  if (opts.only) args.push('--include-name-regex', exact(opts.only));
  if (opts.skip) args.push('--exclude-name-regex', exact(opts.skip));
  const t0 = performance.now();
  const p = Bun.spawn(args, { cwd: dir, stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tempDir('st-home-'), NO_COLOR: '1' } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  const entries: { request: { method: string; url: string }; response: { status: number } }[] = existsSync(har) ? JSON.parse(readFileSync(har, 'utf8')).log.entries : [];
  const answers = entries.map((e) => ({ op: operationOf(e.request.method, new URL(e.request.url).pathname), status: e.response.status }));
  return { code, output: `${out}\n${err}`, answers, seconds: (performance.now() - t0) / 1000 };
}

/** The summary schemathesis ends with, for a failure message. */
const summary = (o: Outcome) => o.output.slice(Math.max(0, o.output.indexOf('FAILURES') === -1 ? o.output.length - 6000 : o.output.indexOf('FAILURES')));

function expectClean(o: Outcome): void {
  if (o.code !== 0) throw new Error(`schemathesis found failures (exit ${o.code}):\n${summary(o)}${o.svc ?? ''}`);
  expect(o.output).toMatch(/\d+ generated, \d+ passed/);
}

interface Instance {
  svc: RunningSvc;
  /** The request headers that make each caller. */
  callers: Record<Caller, Record<string, string>>;
  /** The headers of a new session of a session caller (signed in, its MFA step still pending for the administrator). */
  signIn(caller: Caller): Promise<Record<string, string>>;
}

const emailOf = (caller: Caller) => (caller === 'admin' ? 'admin@example.com' : `${caller.replace('_', '-')}@example.com`);

/** A fresh dist/svc with an administrator (fresh MFA), three project members, an agent, an API key and a second
 * project (so the default one is not the last and archiving it can succeed). */
async function instance(): Promise<Instance> {
  const env = cleanEnv({ ...FAST_IDENTITY_ENV, SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com', SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD, SVC_LOG_LEVEL: 'warn' });
  const svc = await startSvc(env);
  running.push(svc);
  const admin = new Api(svc.url);
  await admin.login('admin@example.com', STRONG_PASSWORD);
  await admin.enrolMfa();
  const callers = { anonymous: {}, admin: admin.sessionHeaders() } as Instance['callers'];
  for (const [caller, role] of [['viewer', 'viewer'], ['operator', 'operator'], ['project_admin', 'admin']] as const) {
    const email = emailOf(caller);
    const user = await admin.call('POST', '/api/v1/users', { email, password: STRONG_PASSWORD });
    expect(user.status).toBe(201);
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { user_id: user.body.id, role })).status).toBe(201);
    const member = new Api(svc.url);
    await member.login(email, STRONG_PASSWORD);
    callers[caller] = member.sessionHeaders();
  }
  expect((await admin.call('POST', '/api/v1/projects', { slug: 'spare', name: 'Spare' })).status).toBe(201);
  expect((await admin.call('POST', '/api/v1/projects/default/agents', { name: 'fuzz-agent' })).status).toBe(201);
  const key = await admin.call('POST', '/api/v1/api-keys', {
    name: 'fuzz',
    scopes: ['projects:read', 'agents:read', 'tasks:read', 'commands:read', 'commands:write', 'users:read'],
  });
  expect(key.status).toBe(201);
  callers.api_key = { authorization: `Bearer ${key.body.token}` };
  const signIn = async (caller: Caller) => {
    const session = new Api(svc.url);
    await session.login(emailOf(caller), STRONG_PASSWORD);
    return session.sessionHeaders();
  };
  return { svc, callers, signIn };
}

const running: RunningSvc[] = [];
const started = performance.now();
/** Each caller's run on the shared instances, and every run of the destructive operations, as they finish. */
const runs = new Map(CALLERS.map((caller) => [caller, Promise.withResolvers<Outcome>()]));
// Rejected before its test awaits it, a run is still reported by that test, not as an unhandled rejection.
for (const r of runs.values()) r.promise.catch(() => {});
const destructiveRuns: Promise<{ caller: Caller; outcome: Outcome }[]>[] = [];
let creatorsOf: (ops: Op[]) => Op[];

/** The operations whose created resource links to one of `ops` (POST /users for DELETE /users/{id}): the stateful
 * phase then acts on something that exists, so a deletion or an archiving can succeed. */
function creators(doc: Doc) {
  const ids = new Map<string, Op>();
  for (const [path, ops] of Object.entries(doc.paths)) for (const [m, op] of Object.entries(ops)) ids.set(op.operationId, [m.toUpperCase(), path]);
  return (targets: Op[]): Op[] => {
    const wanted = new Set(targets.map(name));
    const out: Op[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        const links = Object.values(op.responses['201']?.links ?? {});
        if (links.some((l) => wanted.has(name(ids.get(l.operationId)!)))) out.push([m.toUpperCase(), path]);
      }
    }
    return out;
  };
}

/** A lane: its callers on a shared instance (destructive operations left out), then on a throw-away instance the
 * destructive operations (with what creates their targets), then logout alone, in a session of its own. */
async function lane(callers: readonly Caller[], shared: Instance, scratch: Instance): Promise<{ caller: Caller; outcome: Outcome }[]> {
  for (const caller of callers) {
    runs.get(caller)!.resolve(await fuzzOn(shared.svc, shared.callers[caller], PLAN[caller], { skip: DESTRUCTIVE }));
  }
  const done: { caller: Caller; outcome: Outcome }[] = [];
  for (const caller of callers) {
    // A session caller's logout comes at the very end: run here, it would leave the rest of the run signed out.
    const ops = SESSION_CALLERS.includes(caller) ? DESTRUCTIVE.filter((op) => op !== LOGOUT) : DESTRUCTIVE;
    done.push({ caller, outcome: await fuzzOn(scratch.svc, scratch.callers[caller], PLAN[caller], { only: [...ops, ...creatorsOf(ops)] }) });
  }
  // No stateful phase: nothing links to logout.
  const last = callers.at(-1)!;
  done.push({ caller: last, outcome: await fuzzOn(scratch.svc, await scratch.signIn(last), { phases: 'examples,coverage,fuzzing', examples: PLAN[last].examples }, { only: [LOGOUT] }) });
  return done;
}

beforeAll(async () => {
  if (!existsSync(SCHEMATHESIS)) throw new Error(`${SCHEMATHESIS} is missing: scripts/test creates it from tests/openapi/requirements/schemathesis.txt`);
  const [a, b, scratchA, scratchB] = await Promise.all([instance(), instance(), instance(), instance()]);
  const doc = await (await fetch(`${a.svc.url}/api/v1/openapi.json`)).json();
  operationOf = matcher(doc);
  creatorsOf = creators(doc);
  // Nothing awaits a lane here: the tests below take each run's outcome as it finishes.
  destructiveRuns.push(lane(LANES[0]!, a, scratchA), lane(LANES[1]!, b, scratchB));
  // A lane that fails (schemathesis missing its HAR...) fails the tests that wait on it, not the process.
  for (const p of destructiveRuns) p.catch((e) => { for (const r of runs.values()) r.reject(e); });
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(destructiveRuns);
  for (const svc of running) await svc.stop('SIGKILL');
  console.log(`openapi suite: ${((performance.now() - started) / 1000).toFixed(1)} s in all`);
}, 30_000);

const LABEL: Record<Caller, string> = {
  anonymous: 'anonymous',
  viewer: 'viewer',
  operator: 'operator',
  project_admin: 'project admin',
  admin: 'global administrator with a fresh MFA verification',
  api_key: 'API key',
};

describe('the OpenAPI document holds for every caller (schemathesis against dist/svc)', () => {
  for (const caller of CALLERS) {
    test(LABEL[caller], async () => {
      const o = await runs.get(caller)!.promise;
      expectClean(o);
      const reached = new Set(o.answers.filter((a) => a.status >= 200 && a.status < 300).map((a) => a.op));
      console.log(`${caller}: ${o.answers.length} requests in ${o.seconds.toFixed(1)} s, 2xx on ${reached.size} operations`);
      // The credentials worked: the operations this caller may call answered 2xx at least once.
      expect(REACHABLE[caller].filter((op) => !reached.has(name(op)))).toEqual([]);
    }, 240_000);
  }

  test("routes that end the caller's own access, in throw-away instances: each answered a session caller other than 401", async () => {
    const done = (await Promise.all(destructiveRuns)).flat();
    const seen = new Map<string, Set<number>>(DESTRUCTIVE.map((op) => [name(op), new Set()]));
    for (const { caller, outcome } of done) {
      if (!SESSION_CALLERS.includes(caller)) continue;
      for (const a of outcome.answers) seen.get(a.op)?.add(a.status);
    }
    console.log([...seen].map(([op, statuses]) => `${op}: ${[...statuses].sort((x, y) => x - y).join(' ')}`).join('\n'));
    // A run signed out half-way answers 401 to everything after: each operation must have been reached.
    expect([...seen].filter(([, statuses]) => ![...statuses].some((s) => s !== 401)).map(([op]) => op)).toEqual([]);
    expect([...seen.get(name(LOGOUT))!]).toContain(204);
    for (const { outcome } of done) expectClean(outcome);
  }, 240_000);
});

describe('the suite can fail', () => {
  test('a route whose answer breaks its declared schema fails the run', async () => {
    // A test double: declares {count: integer}, answers {count: "seven"}, documented by the same generator.
    const app = new Elysia().get('/api/v1/double', () => ({ count: 'seven' }), {
      ...contract({ summary: 'A wrong answer', access: { public: true }, ok: Type.Object({ count: Type.Integer() }) }),
    });
    app.get('/api/v1/openapi.json', () => openapiDocument(app.routes), { detail: contract(openapiContract).detail });
    const server = app.listen({ hostname: '127.0.0.1', port: 0 });
    try {
      const o = await fuzz(`http://127.0.0.1:${server.server!.port}`, {}, PLAN.admin);
      expect(o.code).not.toBe(0);
      expect(o.output).toMatch(/Response violates schema/);
      expect(o.output).toMatch(/GET \/api\/v1\/double/);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
