// Leader leases and the audit module's background jobs on both databases.
import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { retentionPass, scheduledVerification, startAuditJobs } from '../../src/audit/jobs.ts';
import { verifyChain } from '../../src/audit/verify.ts';
import { ManualClock, resetClock, setClock } from '../../src/lib/clock.ts';
import { setLogDestination, setLogLevel } from '../../src/lib/log.ts';
import { acquireLease, releaseLease } from '../../src/platform/leases.ts';
import { testDialect, testService, type TestService } from '../helpers/app.ts';
import { appendMany, tamper } from '../helpers/audit.ts';
import { metricValue } from '../helpers/metrics.ts';

let svc: TestService;
beforeEach(async () => {
  svc = await testService({ env: { SVC_AUDIT_RETENTION_DAYS: '1' } });
});
afterEach(async () => {
  resetClock();
  await svc.close();
});

describe(`leases on ${testDialect()}`, () => {
  test('one holder at a time; renewal by the holder; takeover after expiry', async () => {
    const db = svc.ctx.db;
    const clock = new ManualClock(Date.now() * 1000);
    setClock(clock);
    expect(await acquireLease(db, 'job', 10_000, 'a')).toBe(true);
    expect(await acquireLease(db, 'job', 10_000, 'b')).toBe(false);
    expect(await acquireLease(db, 'job', 10_000, 'a')).toBe(true);
    clock.advance(11_000);
    expect(await acquireLease(db, 'job', 10_000, 'b')).toBe(true);
    expect(await acquireLease(db, 'job', 10_000, 'a')).toBe(false);
    await releaseLease(db, 'job', 'b');
    expect(await acquireLease(db, 'job', 10_000, 'a')).toBe(true);
  });

  test('contending processes: exactly one wins', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => acquireLease(svc.ctx.db, 'race', 60_000, `h${i}`)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});

describe(`audit jobs on ${testDialect()}`, () => {
  test('the two verifier metrics are scraped only while SVC_AUDIT_CHAIN_VERIFY_ENABLED is on', async () => {
    const names = ['svc_audit_chain_verifications_total', 'svc_audit_chain_rows_verified'];
    for (const enabled of [false, true]) {
      const own = await testService({ env: { SVC_AUDIT_CHAIN_VERIFY_ENABLED: String(enabled) } });
      try {
        await startAuditJobs(own.ctx);
        const r = await own.call('GET', '/metrics', { headers: { authorization: `Bearer ${own.ctx.config.SVC_METRICS_AUTH_TOKEN}` } });
        expect(r.status).toBe(200);
        const scraped = names.filter((name) => new RegExp(`^${name}[{ ]`, 'm').test(r.text));
        expect({ enabled, scraped }).toEqual({ enabled, scraped: enabled ? names : [] });
        if (enabled) expect(r.text).toContain('svc_audit_chain_verifications_total{outcome="failed"} 0');
      } finally {
        await own.close();
      }
    }
  });

  test('scheduled verification counts outcomes, sets the rows gauge and logs a failure at error level', async () => {
    await appendMany(svc.ctx.db, svc.ctx.audit, 7);
    expect(await scheduledVerification(svc.ctx)).toBe('clean');
    let text = await svc.ctx.metrics.text();
    expect(metricValue(text, 'svc_audit_chain_verifications_total', { outcome: 'clean' })).toBe(1);
    expect(metricValue(text, 'svc_audit_chain_rows_verified')).toBe(7);

    const [id] = (await svc.ctx.db.all<{ id: string }>(sql`SELECT id FROM audit_log ORDER BY occurred_at LIMIT 1`)).map((r) => r.id);
    await tamper(svc.ctx.db, [`UPDATE audit_log SET target_id = 'changed' WHERE id = '${id}'`]);
    const lines: string[] = [];
    setLogDestination({ write: (l: string) => void lines.push(l) } as never);
    setLogLevel('info');
    try {
      expect(await scheduledVerification(svc.ctx)).toBe('failed');
    } finally {
      setLogLevel('silent');
    }
    text = await svc.ctx.metrics.text();
    expect(metricValue(text, 'svc_audit_chain_verifications_total', { outcome: 'failed' })).toBe(1);
    const failure = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'audit chain verification FAILED');
    expect(failure).toMatchObject({ level: 'error', logger: 'audit', first_bad_row: id });
  });

  test('a verification that cannot run is counted as error and the service goes on', async () => {
    const broken = await testService();
    await broken.ctx.db.close();
    expect(await scheduledVerification(broken.ctx)).toBe('error');
    expect(metricValue(await broken.ctx.metrics.text(), 'svc_audit_chain_verifications_total', { outcome: 'error' })).toBe(1);
  });

  test('retention pruning removes rows past SVC_AUDIT_RETENTION_DAYS and the chain still verifies', async () => {
    const clock = new ManualClock((Date.now() - 3 * 86_400_000) * 1000);
    setClock(clock);
    await appendMany(svc.ctx.db, svc.ctx.audit, 4, 'old');
    resetClock();
    await appendMany(svc.ctx.db, svc.ctx.audit, 3, 'new');
    expect(await retentionPass(svc.ctx)).toBe(4);
    const left = await svc.ctx.db.all<{ action: string }>(sql`SELECT action FROM audit_log`);
    expect(left.every((r) => r.action.startsWith('new'))).toBe(true);
    expect(await verifyChain(svc.ctx.db, svc.ctx.audit.keyring)).toMatchObject({ clean: true, rowsVerified: 3 });
    expect(await retentionPass(svc.ctx)).toBe(0);
  });
});
