import { expect, test } from 'bun:test';
import { rowCanonical } from '../../src/audit/canonical.ts';
import { successor } from '../../src/activity/store.ts';
import { sortedJson } from '../../src/lib/sorted-json.ts';

test('the hand-written row canonical form is exactly sorted-key JSON of the covered fields', () => {
  const base = {
    id: '3f0c2b1e-8f4a-4c1d-9e2b-7a6d5c4b3a21',
    occurred_at: '2026-11-22T05:31:24.123456+00:00',
    action: 'user.updated',
    target_type: 'user',
    target_id: 'x"y\\z\u0001',
    result: 'success',
    outcome: 'allow',
    event_id: null,
    actor_digest: 'a'.repeat(64),
    api_key_id: null,
    project_id: null,
    source_ip: '2001:db8::1',
    user_agent: 'Mozilla/5.0 (X11) "quoted" é 🦄',
    metadata: { z: [1, { b: null, a: 'é' }], a: true, n: 1.5 },
    prev_row_hmac: null,
    hmac_key_id: 'b'.repeat(64),
    chain_generation: '9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f',
  };
  expect(rowCanonical(base, sortedJson(base.metadata))).toBe(sortedJson({ v: 1, ...base }));
  expect(JSON.parse(rowCanonical(base, sortedJson(base.metadata)))).toEqual({ v: 1, ...base });
});

test('successor bounds a literal prefix range', () => {
  expect(successor('task.')).toBe('task/');
  expect(successor('a%')).toBe('a&');
  expect(successor('\u{10FFFF}')).toBeNull();
  expect(successor('x\u{10FFFF}')).toBe('y');
  expect(successor('\ud7ff')).toBe('\ue000');
});
