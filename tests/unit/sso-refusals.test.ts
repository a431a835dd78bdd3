// The ledger behind the SSO refusal audit rows (src/auth/sso/refusals.ts): its memory is bounded by
// closing the oldest window early, and what it left out is still summarised then. The ordinary path
// (cap, throttled refusals, window end, shutdown) is tested through the routes in tests/api/sso.test.ts.
import { expect, test } from 'bun:test';
import { RefusalLedger } from '../../src/auth/sso/refusals.ts';

test('past the address limit the oldest window closes early, its left-out refusals summarised up to now', () => {
  const ledger = new RefusalLedger(1, 1000, 2);
  expect(ledger.record('a', 'unknown_state', 0).leftOut).toBe(0);
  expect(ledger.record('a', 'unknown_state', 1).leftOut).toBe(1);
  ledger.record('b', 'unknown_state', 2);
  ledger.record('c', 'unknown_state', 3);
  expect(ledger.close(4)).toEqual([{ ip: 'a', start: 0, end: 4, count: 1, byReason: { unknown_state: 1 } }]);
  // b had nothing left out: it closes at its end without a summary.
  expect(ledger.close(1002)).toEqual([]);
  expect(ledger.nextEnd()).toBe(1003);
});
