// GET /api/v1/activity on both databases: every rule of the spec.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { ManualClock, resetClock, setClock } from '../../src/lib/clock.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { Browser, FAST_IDENTITY_ENV, mfaAdmin, userBrowser } from '../helpers/identity.ts';

let svc: TestService;
let admin: Browser;
let member: Browser & { id: string };
let loner: Browser;
let defaultId: string;
let otherId: string;

beforeAll(async () => {
  svc = await testService({ env: FAST_IDENTITY_ENV });
  admin = await mfaAdmin(svc);
  member = await userBrowser(admin, 'member@example.com');
  loner = await userBrowser(admin, 'loner@example.com');
  defaultId = (await admin.call('GET', '/api/v1/projects/default')).body.id;
  await admin.call('POST', '/api/v1/projects/default/memberships', { body: { user_id: member.id, role: 'viewer' } });
  otherId = (await admin.call('POST', '/api/v1/projects', { body: { slug: 'other', name: 'Other' } })).body.id;
  // Rows whose actions test the literal prefix: % and _ must not act as wildcards.
  for (const action of ['task.failed', 'task.succeeded', 'tasks.bulk', 'ta%k.odd', 'task_x.odd', 'x.task.failed']) {
    await svc.ctx.audit.record(svc.ctx.db, { action, project_id: defaultId, source_ip: '198.51.100.7' });
  }
  await svc.ctx.audit.record(svc.ctx.db, { action: 'task.failed', project_id: otherId });
  await svc.ctx.audit.record(svc.ctx.db, { action: 'service.wide', source_ip: '198.51.100.8' });
});
afterAll(() => svc.close());

const feed = (b: Browser, query = '') => b.call('GET', `/api/v1/activity${query}`);
const actions = (r: { body: { items: { action: string }[] } }) => r.body.items.map((i) => i.action);

describe(`activity feed on ${testDialect()}`, () => {
  test('items carry the documented fields, newest first by occurred_at then id', async () => {
    const r = await feed(admin, '?limit=200');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['items', 'newest_cursor', 'next_before_cursor']);
    const item = r.body.items[0];
    expect(Object.keys(item).sort()).toEqual(
      ['action', 'id', 'metadata', 'occurred_at', 'outcome', 'project_id', 'project_slug', 'result', 'source_ip', 'target_id', 'target_type', 'user_id'].sort(),
    );
    expect(item.occurred_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    const keys = r.body.items.map((i: any) => `${i.occurred_at}|${i.id}`);
    expect(keys).toEqual([...keys].sort().reverse());
    expect(r.body.newest_cursor).toBe(keys[0]);
  });

  test('limit defaults to 50 and is bounded 1..200', async () => {
    for (let i = 0; i < 60; i++) await svc.ctx.audit.record(svc.ctx.db, { action: 'bulk.row', project_id: defaultId });
    expect((await feed(admin)).body.items).toHaveLength(50);
    expect((await feed(admin, '?limit=3')).body.items).toHaveLength(3);
    expect((await feed(admin, '?limit=0')).status).toBe(422);
    expect((await feed(admin, '?limit=201')).status).toBe(422);
    expect((await feed(admin, '?limit=abc')).status).toBe(422);
  });

  test('before_cursor pages backwards without gaps or repeats; since_cursor returns only newer rows', async () => {
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await feed(admin, `?limit=7${cursor ? `&before_cursor=${encodeURIComponent(cursor)}` : ''}`);
      all.push(...r.body.items.map((i: any) => i.id));
      cursor = r.body.next_before_cursor;
    } while (cursor);
    const whole = (await feed(admin, '?limit=200')).body.items.map((i: any) => i.id);
    expect(all).toEqual(whole);
    const newest = (await feed(admin, '?limit=1')).body.newest_cursor;
    expect((await feed(admin, `?since_cursor=${encodeURIComponent(newest)}`)).body.items).toEqual([]);
    await svc.ctx.audit.record(svc.ctx.db, { action: 'late.arrival', project_id: defaultId });
    const after = await feed(admin, `?since_cursor=${encodeURIComponent(newest)}`);
    expect(actions(after)).toEqual(['late.arrival']);
    expect(after.body.newest_cursor).not.toBe(newest);
    for (const bad of ['2026-01-01|x', 'nope', `${newest}extra`]) expect((await feed(admin, `?before_cursor=${encodeURIComponent(bad)}`)).status).toBe(422);
  });

  test('action_prefix is literal: % and _ are not wildcards', async () => {
    expect(actions(await feed(admin, '?limit=200&action_prefix=task.')).sort()).toEqual(['task.failed', 'task.failed', 'task.succeeded']);
    expect(actions(await feed(admin, `?limit=200&action_prefix=${encodeURIComponent('ta%')}`))).toEqual(['ta%k.odd']);
    expect(actions(await feed(admin, `?limit=200&action_prefix=${encodeURIComponent('task_')}`))).toEqual(['task_x.odd']);
    expect(actions(await feed(admin, '?limit=200&action_prefix=zzz'))).toEqual([]);
  });

  test('scope: admins see every row and source_ip; members only their projects, no service-wide rows, no source_ip; no memberships, nothing', async () => {
    const adminItems = (await feed(admin, '?limit=200')).body.items;
    expect(adminItems.some((i: any) => i.action === 'service.wide' && i.project_id === null && i.source_ip === '198.51.100.8')).toBe(true);
    expect(adminItems.some((i: any) => i.project_slug === 'other')).toBe(true);
    const memberItems = (await feed(member, '?limit=200')).body.items;
    expect(memberItems.length).toBeGreaterThan(0);
    expect(memberItems.every((i: any) => i.project_id === defaultId && i.project_slug === 'default' && i.source_ip === null)).toBe(true);
    expect((await feed(loner, '?limit=200')).body.items).toEqual([]);
  });

  test('project_slug: own project filters; unknown or inaccessible gives an empty list, not 403', async () => {
    const own = (await feed(member, '?limit=200&project_slug=default')).body.items;
    expect(own.length).toBeGreaterThan(0);
    for (const slug of ['other', 'does-not-exist']) {
      const r = await feed(member, `?project_slug=${slug}`);
      expect(r.status).toBe(200);
      expect(r.body.items).toEqual([]);
    }
    const other = (await feed(admin, '?limit=200&project_slug=other')).body.items;
    expect(other.map((i: any) => i.action)).toContain('task.failed');
    expect(other.every((i: any) => i.project_slug === 'other')).toBe(true);
    expect((await feed(admin, '?limit=200&project_slug=other&action_prefix=task.')).body.items.map((i: any) => i.action)).toEqual(['task.failed']);
  });

  test('60 requests a minute per user, then 429 with Retry-After: 60 and the documented detail', async () => {
    const clock = new ManualClock(Date.now() * 1000);
    setClock(clock);
    try {
      const fresh = await userBrowser(admin, 'poller@example.com');
      for (let i = 0; i < 60; i++) expect((await feed(fresh, '?limit=1')).status).toBe(200);
      const limited = await feed(fresh, '?limit=1');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('60');
      expect(limited.body.detail).toBe('activity feed rate limit exceeded (60/min per worker)');
      // Another user is not affected; the window moves on.
      expect((await feed(member, '?limit=1')).status).toBe(200);
      clock.advance(61_000);
      expect((await feed(fresh, '?limit=1')).status).toBe(200);
    } finally {
      resetClock();
    }
  });

  test('anonymous callers and API keys are refused', async () => {
    expect((await svc.call('GET', '/api/v1/activity')).status).toBe(401);
    const key = (await admin.call('POST', '/api/v1/api-keys', { body: { name: 'k', scopes: ['admin:*'] } })).body.token;
    expect((await svc.call('GET', '/api/v1/activity', { headers: { authorization: `Bearer ${key}` } })).status).toBe(403);
  });
});
