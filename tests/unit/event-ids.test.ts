// Content-derived event ids: version 5 ids equal Python's uuid.uuid5 (the z4j brain's), byte for byte; task events' ids lead with their second.
import { expect, test } from 'bun:test';
import { EVENT_ID_NAMESPACE, timePrefixedV5, uuidV5 } from '../../src/ingest/event-ids.ts';

test('uuidV5 gives what Python uuid.uuid5 gives', () => {
  // Expected values printed by CPython's uuid.uuid5.
  expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  expect(uuidV5(EVENT_ID_NAMESPACE, 'p:task-1:task.started:1795000000')).toBe('e526545a-e25e-5035-9c27-388485faf90e');
  expect(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9')).toBe('9c5228df-5396-5d28-8177-7b3fb3820464');
  // Repeated calls (the hasher state is copied, never consumed) agree.
  expect(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9')).toBe(uuidV5(EVENT_ID_NAMESPACE, 'caf\u00e9'));
});

test('timePrefixedV5: led by the time (ids sort by it), version 8, RFC variant, the same for the same name and time', () => {
  const at = Date.UTC(2026, 10, 22, 12, 0, 0);
  const id = timePrefixedV5(EVENT_ID_NAMESPACE, 'p:task-1:task.started:1795000000', at);
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(id.replace(/-/g, '').slice(0, 12)).toBe(at.toString(16).padStart(12, '0'));
  // The rest is the name's hash, as in the version 5 id of the same name.
  expect(id.slice(15)).toBe(uuidV5(EVENT_ID_NAMESPACE, 'p:task-1:task.started:1795000000').slice(15));
  expect(timePrefixedV5(EVENT_ID_NAMESPACE, 'p:task-1:task.started:1795000000', at)).toBe(id);
  expect(timePrefixedV5(EVENT_ID_NAMESPACE, 'p:task-2:task.started:1795000000', at)).not.toBe(id);
  const later = timePrefixedV5(EVENT_ID_NAMESPACE, 'a', at + 1000);
  const earlier = timePrefixedV5(EVENT_ID_NAMESPACE, 'z', at);
  expect(earlier < later).toBe(true);
});
