// Saved views of the task list, per user and project, on both databases: create, list, rename, replace and
// delete; duplicate names; the cap of 50 per user and project; bad input answered 422 in the envelope;
// another user's view and a non-member's call not found; API keys read with tasks:read and never write;
// a deleted user's views go with them.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { MAX_VIEWS_PER_PROJECT } from '../../src/saved-views/schemas.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, matrixCallers, userBrowser, type MatrixActor } from '../helpers/identity.ts';

let svc: TestService;
let admin: Browser;
let browsers: Partial<Record<MatrixActor, Browser & { id?: string }>> = {};
const keys: { with?: string; without?: string } = {};

const P = '/api/v1/projects/default/saved-views';
const view = (name: string, query = 'state=failure&sort=runtime_ms&order=desc') => ({ page: 'tasks', name, query });

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  const callers = await matrixCallers(svc, ['tasks:read']);
  ({ admin, browsers } = callers);
  Object.assign(keys, callers.keys);
}, 60_000);
afterAll(() => svc?.close());

const expectEnvelope = (body: any, error: string) => {
  expect(body.error).toBe(error);
  expect(typeof body.message).toBe('string');
  expect(typeof body.details).toBe('object');
};

describe('saved views', () => {
  test('create, list (by page and name), rename, replace the query, delete', async () => {
    const viewer = browsers.viewer!;
    const created = await viewer.call('POST', P, { body: view('Slow failures') });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ page: 'tasks', name: 'Slow failures', query: 'state=failure&sort=runtime_ms&order=desc' });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.created_at).toBe(created.body.updated_at);
    expect(created.body).not.toHaveProperty('user_id');
    const empty = await viewer.call('POST', P, { body: view('All tasks', '') });
    expect(empty.status).toBe(201);

    const listed = await viewer.call('GET', `${P}?page=tasks`);
    expect(listed.status).toBe(200);
    expect(listed.body.map((v: any) => v.name)).toEqual(['All tasks', 'Slow failures']);
    expect((await viewer.call('GET', P)).body).toHaveLength(2);

    const renamed = await viewer.call('PATCH', `${P}/${created.body.id}`, { body: { name: 'Failures, slowest first' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id: created.body.id, name: 'Failures, slowest first', query: created.body.query });
    expect(renamed.body.updated_at > created.body.updated_at).toBe(true);
    const replaced = await viewer.call('PATCH', `${P}/${created.body.id}`, { body: { query: 'state=failure' } });
    expect(replaced.body).toMatchObject({ name: 'Failures, slowest first', query: 'state=failure' });
    // Renaming to its own name is no conflict.
    expect((await viewer.call('PATCH', `${P}/${created.body.id}`, { body: { name: 'Failures, slowest first' } })).status).toBe(200);

    expect((await viewer.call('DELETE', `${P}/${created.body.id}`)).body).toEqual({ success: true });
    expect((await viewer.call('DELETE', `${P}/${created.body.id}`)).status).toBe(404);
    expect((await viewer.call('GET', P)).body.map((v: any) => v.name)).toEqual(['All tasks']);
  });

  test('names are unique per user, project and page: 409 name_taken on create and rename; another user may use the name', async () => {
    const op = browsers.operator!;
    const first = await op.call('POST', P, { body: view('Mine') });
    expect(first.status).toBe(201);
    const dup = await op.call('POST', P, { body: view('Mine', 'state=success') });
    expect(dup.status).toBe(409);
    expectEnvelope(dup.body, 'name_taken');
    expect(dup.body.details).toEqual({ page: 'tasks', name: 'Mine' });
    const other = await op.call('POST', P, { body: view('Other') });
    const clash = await op.call('PATCH', `${P}/${other.body.id}`, { body: { name: 'Mine' } });
    expect(clash.status).toBe(409);
    expectEnvelope(clash.body, 'name_taken');
    // Case matters, as in the address bar.
    expect((await op.call('POST', P, { body: view('mine') })).status).toBe(201);
    // The same name for someone else, and in another project for the same person, is fine.
    expect((await browsers.project_admin!.call('POST', P, { body: view('Mine') })).status).toBe(201);
    expect((await browsers.other_project!.call('POST', '/api/v1/projects/elsewhere/saved-views', { body: view('Mine') })).status).toBe(201);
    expect((await op.call('GET', P)).body.map((v: any) => v.name)).toEqual(['Mine', 'Other', 'mine']);
  });

  test(`at most ${MAX_VIEWS_PER_PROJECT} views per user and project: the next is 409 saved_view_limit`, async () => {
    const person = await userBrowser(admin, 'collector@example.com');
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: person.id, role: 'viewer' } })).status).toBe(201);
    for (let n = 0; n < MAX_VIEWS_PER_PROJECT; n++) expect((await person.call('POST', P, { body: view(`v${n}`) })).status).toBe(201);
    const over = await person.call('POST', P, { body: view('one too many') });
    expect(over.status).toBe(409);
    expectEnvelope(over.body, 'saved_view_limit');
    expect(over.body.details).toEqual({ limit: MAX_VIEWS_PER_PROJECT });
    expect((await person.call('GET', P)).body).toHaveLength(MAX_VIEWS_PER_PROJECT);
    // Deleting one makes room.
    const some = (await person.call('GET', P)).body[0].id;
    expect((await person.call('DELETE', `${P}/${some}`)).status).toBe(200);
    expect((await person.call('POST', P, { body: view('one too many') })).status).toBe(201);
  });

  test('bad input is 422 validation_failed in the envelope, naming the field; nothing is stored', async () => {
    const viewer = browsers.viewer!;
    const before = (await viewer.call('GET', P)).body.length;
    const bad: [unknown, string][] = [
      [{ page: 'tasks', query: '' }, '/name'],
      [view(''), '/name'],
      [view(' padded'), '/name'],
      [view('x'.repeat(61)), '/name'],
      [view('tab\there'), '/name'],
      [{ ...view('p'), page: 'agents' }, '/page'],
      [view('q', 'a='.padEnd(4097, 'b')), '/query'],
      [view('q', '?state=failure'), '/query'],
      [view('q', 'state=failure#top'), '/query'],
      [view('q', 'name=two words'), '/query'],
      [{ ...view('extra'), user_id: crypto.randomUUID() }, ''],
    ];
    for (const [body, field] of bad) {
      const res = await viewer.call('POST', P, { body });
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expectEnvelope(res.body, 'validation_failed');
      if (field) expect(res.body.details.fields.map((f: any) => f.path)).toContain(field);
    }
    // A 4 KiB query is fine.
    expect((await viewer.call('POST', P, { body: view('long', 'a='.padEnd(4096, 'b')) })).status).toBe(201);
    const id = (await viewer.call('GET', P)).body[0].id;
    for (const body of [{}, { name: '' }, { page: 'tasks' }, { query: '#' }]) {
      const res = await viewer.call('PATCH', `${P}/${id}`, { body });
      expect(res.status).toBe(422);
      expectEnvelope(res.body, 'validation_failed');
    }
    expect((await viewer.call('PATCH', `${P}/not-a-uuid`, { body: { name: 'x' } })).status).toBe(422);
    expect((await viewer.call('GET', `${P}?page=nope`)).status).toBe(422);
    expect((await viewer.call('GET', P)).body.length).toBe(before + 1);
  });

  test("another user's view is not found (404) to read through, rename or delete; a non-member gets the project's 404", async () => {
    const mine = (await browsers.project_admin!.call('POST', P, { body: view(`private-${crypto.randomUUID().slice(0, 6)}`) })).body;
    for (const who of [browsers.viewer!, browsers.operator!, admin]) {
      const patched = await who.call('PATCH', `${P}/${mine.id}`, { body: { name: 'stolen' } });
      expect(patched.status).toBe(404);
      expectEnvelope(patched.body, 'not_found');
      expect((await who.call('DELETE', `${P}/${mine.id}`)).status).toBe(404);
      expect((await who.call('GET', P)).body.map((v: any) => v.id)).not.toContain(mine.id);
    }
    // Through another project's path, the owner's own view is not found either.
    await admin.call('POST', '/api/v1/projects/elsewhere/memberships', { body: { user_id: browsers.project_admin!.id, role: 'viewer' } });
    expect((await browsers.project_admin!.call('DELETE', `/api/v1/projects/elsewhere/saved-views/${mine.id}`)).status).toBe(404);
    expect((await browsers.project_admin!.call('GET', P)).body.map((v: any) => v.id)).toContain(mine.id);

    const outsider = browsers.other_project!;
    for (const [method, path, body] of [
      ['GET', P, undefined],
      ['POST', P, view('x')],
      ['PATCH', `${P}/${mine.id}`, { name: 'x' }],
      ['DELETE', `${P}/${mine.id}`, undefined],
    ] as const) {
      const res = await outsider.call(method, path, body ? { body } : {});
      expect({ method, status: res.status }).toEqual({ method, status: 404 });
      expectEnvelope(res.body, 'not_found');
    }
    expect((await svc.call('GET', P)).status).toBe(401);
  });

  test('API keys read the owner’s views with tasks:read; writing takes a browser session', async () => {
    const own = (await admin.call('POST', P, { body: view('admin view') })).body;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const read = await svc.call('GET', P, { headers: bearer(keys.without!) });
    expect(read.status).toBe(200);
    expect(read.body.map((v: any) => v.id)).toContain(own.id);
    for (const [method, path, body] of [
      ['POST', P, view('by key')],
      ['PATCH', `${P}/${own.id}`, { name: 'by key' }],
      ['DELETE', `${P}/${own.id}`, undefined],
    ] as const) {
      const res = await svc.call(method, path, { headers: bearer(keys.with!), ...(body ? { body } : {}) });
      expect({ method, status: res.status }).toEqual({ method, status: 403 });
      expectEnvelope(res.body, 'api_key_not_allowed');
    }
  });

  test("writes leave no audit row; a deleted user's views go with them", async () => {
    const person = await userBrowser(admin, 'leaver@example.com');
    expect((await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: person.id, role: 'viewer' } })).status).toBe(201);
    const audits = async () => Number((await svc.ctx.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM audit_log WHERE user_id = ${person.id}`))[0]!.n);
    const before = await audits();
    const v = (await person.call('POST', P, { body: view('soon gone') })).body;
    await person.call('PATCH', `${P}/${v.id}`, { body: { name: 'going' } });
    expect(await audits()).toBe(before);
    const count = async () => Number((await svc.ctx.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM saved_views WHERE user_id = ${person.id}`))[0]!.n);
    expect(await count()).toBe(1);
    expect((await admin.call('DELETE', `/api/v1/users/${person.id}`)).status).toBe(200);
    expect(await count()).toBe(0);
  });
});
