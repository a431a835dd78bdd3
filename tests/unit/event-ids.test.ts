// Content-derived event ids must equal Python's uuid.uuid5 (the z4j brain's), byte for byte.
import { expect, test } from 'bun:test';
import { EVENT_ID_NAMESPACE, uuidV5 } from '../../src/ingest/event-ids.ts';

test('uuidV5 gives what Python uuid.uuid5 gives', () => {
  // Expected values printed by CPython's uuid.uuid5.
  expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  expect(uuidV5(EVENT_ID_NAMESPACE, 'p:task-1:task.started:1795000000')).toBe('e526545a-e25e-5035-9c27-388485faf90e');
  expect(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9')).toBe('9c5228df-5396-5d28-8177-7b3fb3820464');
  // Repeated calls (the hasher state is copied, never consumed) agree.
  expect(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9')).toBe(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9'));
});
