// The audit webhook forwarder against a real receiver: an https server in a
// network namespace on a public (non-blocked) address.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { AuditForwarder } from '../../src/audit/forwarder.ts';
import { eventually } from '../helpers/binary.ts';
import { testService, type TestService } from '../helpers/app.ts';
import { metricValue } from '../helpers/metrics.ts';
import { startReceiver, unavailable, type Receiver, type Seen } from '../helpers/outbound-netns.ts';

const skip = unavailable();
if (skip) console.log(`SKIPPED audit forwarder delivery tests: ${skip}`);

const SECRET = 'audit-webhook-secret-0123456789abcdef-0123456789';
const FIELDS = ['action', 'api_key_id', 'event_id', 'id', 'metadata', 'occurred_at', 'outcome', 'prev_row_hmac', 'project_id', 'result', 'row_hmac', 'source_ip', 'target_id', 'target_type', 'user_agent', 'user_id'];

let receiver: Receiver;
beforeAll(async () => {
  if (!skip) receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.stop();
});

async function serviceWith(path: string, extra: Record<string, string> = {}) {
  const svc = await testService({
    env: { SVC_AUDIT_WEBHOOK_URL: `https://${receiver.address}${path}`, SVC_AUDIT_WEBHOOK_HMAC_SECRET: SECRET, ...extra },
  });
  const forwarder = AuditForwarder.fromConfig(svc.ctx.config, svc.ctx.metrics, { ca: receiver.goodCert })!;
  await forwarder.start();
  svc.ctx.audit.setSink(forwarder);
  return { svc, forwarder };
}

const swallowed = async (svc: TestService, site: string) =>
  metricValue(await svc.ctx.metrics.text(), 'svc_swallowed_exceptions_total', { module: 'audit_forwarder', site });

describe.skipIf(Boolean(skip))('audit webhook forwarder', () => {
  test('the receiver gets every row once, signed, with the sixteen sorted fields', async () => {
    const { svc, forwarder } = await serviceWith('/hook-ok');
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await svc.ctx.audit.record(svc.ctx.db, { action: 'test.forward', target_id: String(i), metadata: { i } })).id);
      let got: Seen[] = [];
      await eventually(async () => (got = (await receiver.log()).filter((s) => s.path === '/hook-ok')).length >= 20, 10_000, 'deliveries');
      await Bun.sleep(200);
      got = (await receiver.log()).filter((s) => s.path === '/hook-ok');
      expect(got).toHaveLength(20);
      const stored = new Map(
        (await svc.ctx.db.all<{ id: string; row_hmac: string }>(sql`SELECT id, row_hmac FROM audit_log`)).map((r) => [r.id, r.row_hmac]),
      );
      const seenIds: string[] = [];
      for (const s of got) {
        expect(s.method).toBe('POST');
        expect(s.headers['content-type']).toBe('application/json');
        expect(s.headers['x-svc-audit-schema']).toBe('1');
        const ts = String(s.headers['x-svc-audit-timestamp']);
        expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(30);
        // Verify before parsing, as a receiver should.
        const expected = `sha256=${createHmac('sha256', SECRET).update(`${ts}.${s.body}`).digest('hex')}`;
        expect(s.headers['x-svc-audit-signature']).toBe(expected);
        const row = JSON.parse(s.body);
        expect(Object.keys(row)).toEqual(FIELDS);
        expect(s.body).toBe(JSON.stringify(row)); // compact, keys in sorted order
        expect(row.row_hmac).toBe(stored.get(row.id)!);
        seenIds.push(row.id);
      }
      expect(seenIds.sort()).toEqual(ids.sort());
      expect(await swallowed(svc, 'send_one')).toBe(0);
    } finally {
      await forwarder.stop();
      await svc.close();
    }
  });

  test('a receiver answering non-2xx: rows dropped and counted as send_one', async () => {
    const { svc, forwarder } = await serviceWith('/status');
    try {
      for (let i = 0; i < 3; i++) await svc.ctx.audit.record(svc.ctx.db, { action: 'test.rejected' });
      await eventually(async () => (await swallowed(svc, 'send_one')) === 3, 10_000, 'three drops');
    } finally {
      await forwarder.stop();
      await svc.close();
    }
  });

  test('a full queue drops new rows without delaying the audit write', async () => {
    const { svc, forwarder } = await serviceWith('/hang', { SVC_AUDIT_WEBHOOK_BUFFER_SIZE: '10', SVC_AUDIT_WEBHOOK_TIMEOUT_SECONDS: '1' });
    try {
      const started = performance.now();
      for (let i = 0; i < 40; i++) await svc.ctx.audit.record(svc.ctx.db, { action: 'test.flood' });
      expect(performance.now() - started).toBeLessThan(3000);
      // One row is in flight, ten wait: the rest were dropped at once.
      expect(await swallowed(svc, 'queue_full')).toBe(29);
      expect((await svc.ctx.db.all(sql`SELECT id FROM audit_log`)).length).toBe(40);
    } finally {
      await forwarder.stop();
      await svc.close();
    }
  });

  test('a destination in a blocked range is refused at dispatch and counted as ssrf_or_dns', async () => {
    const svc = await testService({ env: { SVC_AUDIT_WEBHOOK_URL: 'https://127.0.0.1:9/hook', SVC_AUDIT_WEBHOOK_HMAC_SECRET: SECRET } });
    const forwarder = AuditForwarder.fromConfig(svc.ctx.config, svc.ctx.metrics)!;
    await forwarder.start();
    svc.ctx.audit.setSink(forwarder);
    try {
      for (let i = 0; i < 2; i++) await svc.ctx.audit.record(svc.ctx.db, { action: 'test.blocked' });
      await eventually(async () => (await swallowed(svc, 'ssrf_or_dns')) === 2, 10_000, 'two refusals');
    } finally {
      await forwarder.stop();
      await svc.close();
    }
  });

  test('when the receiver goes down, drops are counted', async () => {
    const own = await startReceiver();
    const svc = await testService({ env: { SVC_AUDIT_WEBHOOK_URL: `https://${own.address}/down`, SVC_AUDIT_WEBHOOK_HMAC_SECRET: SECRET, SVC_AUDIT_WEBHOOK_TIMEOUT_SECONDS: '2' } });
    const forwarder = AuditForwarder.fromConfig(svc.ctx.config, svc.ctx.metrics, { ca: own.goodCert })!;
    await forwarder.start();
    svc.ctx.audit.setSink(forwarder);
    try {
      await svc.ctx.audit.record(svc.ctx.db, { action: 'test.before' });
      await eventually(async () => (await own.log()).some((s) => s.path === '/down'), 10_000, 'first delivery');
      await own.stop();
      for (let i = 0; i < 3; i++) await svc.ctx.audit.record(svc.ctx.db, { action: 'test.after' });
      await eventually(async () => (await swallowed(svc, 'send_one')) === 3, 15_000, 'three drops');
    } finally {
      await forwarder.stop();
      await svc.close();
    }
  });
});
