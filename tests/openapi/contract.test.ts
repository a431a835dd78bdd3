// The API contract, fuzzed: schemathesis (PyPI) reads /api/v1/openapi.json of
// the compiled dist/svc and sends generated requests as each kind of caller,
// checking that no answer is a server error, every status and body is the one
// the document declares for that operation, and content types match. The
// routes that end the caller's own access (logout, password changes, role and
// membership changes, archiving, deletions) run in throw-away instances of
// their own, so the other runs keep their credentials. A test double whose
// answer breaks its declared schema shows the suite can fail.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../../src/http/contract.ts';
import { openapiDocument } from '../../src/http/openapi.ts';
import { Api } from '../helpers/api-client.ts';
import { cleanEnv, startSvc, type RunningSvc } from '../helpers/binary.ts';
import { tempDir } from '../helpers/home.ts';
import { FAST_IDENTITY_ENV, STRONG_PASSWORD } from '../helpers/identity.ts';

const VENVS = process.env.SVC_TEST_VENVS ?? join(import.meta.dir, '../../.venv');
const SCHEMATHESIS = join(VENVS, 'schemathesis/bin/schemathesis');
const CHECKS = 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance';
/** Examples per operation and the seed: fixed, so a run is repeatable (SVC_CONTRACT_SEED picks another).
 * One worker: schemathesis's threads hit a CPython 3.11 bug in ast.parse ("AST constructor recursion
 * depth mismatch", an internal error of the run, not a finding). */
const EXAMPLES = process.env.SVC_CONTRACT_EXAMPLES ?? '12';
const SEED = process.env.SVC_CONTRACT_SEED ?? '20261126';

/** Operations that end or change the caller's own access: fuzzed only in throw-away instances. */
const DESTRUCTIVE: [method: string, path: string][] = [
  ['POST', '/api/v1/auth/logout'],
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

interface Outcome {
  code: number;
  output: string;
}

/** Runs schemathesis against `base` as the caller the headers make; `only` limits it to some operations. */
async function fuzz(base: string, headers: Record<string, string>, opts: { only?: [string, string][]; skip?: [string, string][] } = {}): Promise<Outcome> {
  const args = [SCHEMATHESIS, 'run', `${base}/api/v1/openapi.json`, '--checks', CHECKS, '--max-examples', EXAMPLES, '--seed', SEED, '--no-shrink', '--workers', '1'];
  for (const [k, v] of Object.entries(headers)) args.push('--header', `${k}: ${v}`);
  const exact = (ops: [string, string][]) => `^(${ops.map(([m, p]) => `${m} ${p.replace(/[{}]/g, '\\$&')}`).join('|')})$`;
  if (opts.only) args.push('--include-name-regex', exact(opts.only));
  if (opts.skip) args.push('--exclude-name-regex', exact(opts.skip));
  // In a scratch directory: schemathesis keeps a cache of its findings in the working directory.
  const p = Bun.spawn(args, { cwd: tempDir('st-run-'), stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tempDir('st-home-'), NO_COLOR: '1' } });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, output: `${out}\n${err}` };
}

/** The summary schemathesis ends with, for a failure message. */
const summary = (o: Outcome) => o.output.slice(Math.max(0, o.output.indexOf('FAILURES') === -1 ? o.output.length - 6000 : o.output.indexOf('FAILURES')));

function expectClean(o: Outcome): void {
  if (o.code !== 0) throw new Error(`schemathesis found failures (exit ${o.code}):\n${summary(o)}`);
  expect(o.output).toMatch(/\d+ generated, \d+ passed/);
}

interface Instance {
  svc: RunningSvc;
  admin: Api;
  roles: Record<'viewer' | 'operator' | 'project_admin', Api>;
  apiKey: string;
}

/** A fresh dist/svc with an administrator (fresh MFA), three project members, an agent and an API key. */
async function instance(): Promise<Instance> {
  const env = cleanEnv({ ...FAST_IDENTITY_ENV, SVC_BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com', SVC_BOOTSTRAP_ADMIN_PASSWORD: STRONG_PASSWORD, SVC_LOG_LEVEL: 'warn' });
  const svc = await startSvc(env);
  const admin = new Api(svc.url);
  await admin.login('admin@example.com', STRONG_PASSWORD);
  await admin.enrolMfa();
  const roles = {} as Instance['roles'];
  for (const [name, role] of [['viewer', 'viewer'], ['operator', 'operator'], ['project_admin', 'admin']] as const) {
    const email = `${name.replace('_', '-')}@example.com`;
    const user = await admin.call('POST', '/api/v1/users', { email, password: STRONG_PASSWORD });
    expect(user.status).toBe(201);
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { user_id: user.body.id, role })).status).toBe(201);
    roles[name] = new Api(svc.url);
    await roles[name].login(email, STRONG_PASSWORD);
  }
  expect((await admin.call('POST', '/api/v1/projects/default/agents', { name: 'fuzz-agent' })).status).toBe(201);
  const key = await admin.call('POST', '/api/v1/api-keys', {
    name: 'fuzz',
    scopes: ['projects:read', 'agents:read', 'tasks:read', 'commands:read', 'commands:write', 'users:read'],
  });
  expect(key.status).toBe(201);
  return { svc, admin, roles, apiKey: key.body.token };
}

const running: RunningSvc[] = [];
let main: Instance;

beforeAll(async () => {
  if (!existsSync(SCHEMATHESIS)) throw new Error(`${SCHEMATHESIS} is missing: scripts/test creates it from tests/openapi/requirements/schemathesis.txt`);
  main = await instance();
  running.push(main.svc);
}, 60_000);

afterAll(async () => {
  for (const svc of running) await svc.stop('SIGKILL');
}, 30_000);

describe('the OpenAPI document holds for every caller (schemathesis against dist/svc)', () => {
  test('anonymous', async () => expectClean(await fuzz(main.svc.url, {}, { skip: DESTRUCTIVE })), 180_000);
  for (const role of ['viewer', 'operator', 'project_admin'] as const) {
    test(role.replace('_', ' '), async () => expectClean(await fuzz(main.svc.url, main.roles[role].sessionHeaders(), { skip: DESTRUCTIVE })), 180_000);
  }
  test('global administrator with a fresh MFA verification', async () => expectClean(await fuzz(main.svc.url, main.admin.sessionHeaders(), { skip: DESTRUCTIVE })), 180_000);
  test('API key', async () => expectClean(await fuzz(main.svc.url, { authorization: `Bearer ${main.apiKey}` }, { skip: DESTRUCTIVE })), 180_000);
  test('routes that end the caller\'s own access, each caller in a throw-away instance', async () => {
    const scratch = await instance();
    running.push(scratch.svc);
    // The administrator last: its run may archive the project the others belong to.
    for (const api of [scratch.roles.viewer, scratch.roles.project_admin, scratch.admin]) expectClean(await fuzz(scratch.svc.url, api.sessionHeaders(), { only: DESTRUCTIVE }));
  }, 180_000);
});

describe('the suite can fail', () => {
  test('a route whose answer breaks its declared schema fails the run', async () => {
    // A test double: declares {count: integer}, answers {count: "seven"}, documented by the same generator.
    const app = new Elysia().get('/api/v1/double', () => ({ count: 'seven' }), {
      ...contract({ summary: 'A wrong answer', access: { public: true }, ok: Type.Object({ count: Type.Integer() }) }),
    });
    app.get('/api/v1/openapi.json', () => openapiDocument(app.routes));
    const server = app.listen({ hostname: '127.0.0.1', port: 0 });
    try {
      const o = await fuzz(`http://127.0.0.1:${server.server!.port}`, {});
      expect(o.code).not.toBe(0);
      expect(o.output).toMatch(/Response violates schema/);
      expect(o.output).toMatch(/GET \/api\/v1\/double/);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
