// Failure groups: how an exception is split into type and message, how the
// message is normalised (values named in it become placeholders), and the key.
import { describe, expect, test } from 'bun:test';
import { failureGroupOf, failureOfEvent, groupKeyOf, normaliseMessage } from '../../src/stats/normalise.ts';

describe('normaliseMessage', () => {
  const cases: [string, string][] = [
    ['plain words stay as they are', 'plain words stay as they are'],
    ['Task 42 failed after 3 retries', 'Task <n> failed after <n> retries'],
    ['timeout after 1.5s (limit 500ms)', 'timeout after <n>s (limit <n>ms)'],
    ['balance -12.50 below 0', 'balance <n> below <n>'],
    ['version 1.2.3 is too old', 'version <n> is too old'],
    ['got 1e-05', 'got <n>'],
    ['user_42 and order-7 not found', 'user_<n> and order-<n> not found'],
    ['job12345 died', 'job<n> died'],
    ['utf8 and sha256 and s3 and v2 stay', 'utf8 and sha256 and s3 and v2 stay'],
    ['record 550e8400-e29b-41d4-a716-446655440000 missing', 'record <uuid> missing'],
    ['record 550E8400E29B41D4A716446655440000 missing', 'record <uuid> missing'],
    ['object at 0x7f3a2b1c9d40 is gone', 'object at <hex> is gone'],
    ['commit 3f2a9c1e7b0d missing', 'commit <hex> missing'],
    ['mongo id 507f1f77bcf86cd799439011', 'mongo id <hex>'],
    ['deadbeef words stay', 'deadbeef words stay'],
    ["KeyError 'user_id'", 'KeyError <str>'],
    ['column "email" does not exist', 'column <str> does not exist'],
    ['run `make test`', 'run <str>'],
    ['connect to 10.0.0.5:5432 refused', 'connect to <ip> refused'],
    ['from 192.168.1.20 denied', 'from <ip> denied'],
    ['host 2001:db8::8a2e:370:7334 unreachable', 'host <ip> unreachable'],
    ['bad ::1 address', 'bad <ip> address'],
    ['mail to ada@example.com bounced', 'mail to <email> bounced'],
    ['GET https://api.example.com/v1/users/42?x=1 returned 503', 'GET <url> returned <n>'],
    ['at 2026-06-10T12:30:30.123456+00:00 it broke', 'at <time> it broke'],
    ['on 2026-06-10 at 12:30:30 it broke', 'on <time> at <time> it broke'],
    ['ids [1, 2, 3, 4] missing', 'ids [<n> …] missing'],
    ['ids [7] missing', 'ids [<n>] missing'],
    ["names 'a', 'b', 'c'", 'names <str> …'],
    ['  lots   of\n white\tspace ', 'lots of white space'],
  ];
  for (const [input, output] of cases) test(JSON.stringify(input), () => expect(normaliseMessage(input)).toBe(output));

  test('messages differing only in their values normalise alike; others do not', () => {
    const a = normaliseMessage(`connection to "10.0.0.1", port 5432 failed: request ${crypto.randomUUID()} after 2.5s`);
    const b = normaliseMessage(`connection to "10.9.8.7", port 6543 failed: request ${crypto.randomUUID()} after 30s`);
    expect(a).toBe(b);
    expect(normaliseMessage('connection refused')).not.toBe(normaliseMessage('connection reset'));
  });

  test('long input is bounded: at most 500 characters out, and quick', () => {
    const huge = `${'x1 '.repeat(100_000)}'unterminated`;
    const t0 = performance.now();
    const out = normaliseMessage(huge);
    expect(performance.now() - t0).toBeLessThan(200);
    expect(out.length).toBeLessThanOrEqual(500);
  });
});

describe('failureOfEvent', () => {
  test('exception (class name) and exception_message, as z4j-celery sends them', () => {
    expect(failureOfEvent({ exception: 'ValueError', exception_message: 'bad value 3' })).toEqual({ type: 'ValueError', message: 'bad value 3' });
    expect(failureOfEvent({ exception: 'requests.exceptions.ConnectTimeout', exception_message: '' })).toEqual({ type: 'requests.exceptions.ConnectTimeout', message: '' });
  });

  test('an exception text carrying its message: "Type: message" and a Python repr', () => {
    expect(failureOfEvent({ exception: 'ValueError: bad value 3' })).toEqual({ type: 'ValueError', message: 'bad value 3' });
    expect(failureOfEvent({ exception: "KeyError('user_id')" })).toEqual({ type: 'KeyError', message: 'user_id' });
    expect(failureOfEvent({ exception: 'RuntimeError("boom")' })).toEqual({ type: 'RuntimeError', message: 'boom' });
  });

  test('a whole traceback (z4j-rq): its last line', () => {
    const tb = 'Traceback (most recent call last):\n  File "app.py", line 9, in run\n    int(x)\nValueError: invalid literal for int() with base 10: \'abc\'\n';
    expect(failureOfEvent({ exception: tb })).toEqual({ type: 'ValueError', message: "invalid literal for int() with base 10: 'abc'" });
  });

  test('exception_message wins over a message inside the exception text; nothing reported is Unknown', () => {
    expect(failureOfEvent({ exception: 'ValueError: inner', exception_message: 'outer' })).toEqual({ type: 'ValueError', message: 'outer' });
    expect(failureOfEvent({})).toEqual({ type: 'Unknown', message: '' });
    expect(failureOfEvent({ exception: 42 })).toEqual({ type: 'Unknown', message: '' });
    expect(failureOfEvent({ exception: 'something went wrong here' })).toEqual({ type: 'Unknown', message: 'something went wrong here' });
  });
});

describe('group keys', () => {
  test('16 hex digits of SHA-256 over type and normalised message: stable, and different for a different type', () => {
    const key = groupKeyOf('ValueError', 'bad value <n>');
    expect(key).toMatch(/^[0-9a-f]{16}$/);
    expect(key).toBe(new Bun.CryptoHasher('sha256').update('ValueError\nbad value <n>').digest('hex').slice(0, 16));
    expect(groupKeyOf('TypeError', 'bad value <n>')).not.toBe(key);
  });

  test('failures differing only in their values share a group', () => {
    const a = failureGroupOf({ exception: 'ValueError', exception_message: 'bad value 3 for id 550e8400-e29b-41d4-a716-446655440000' });
    const b = failureGroupOf({ exception: 'ValueError', exception_message: 'bad value 99 for id 6ba7b810-9dad-11d1-80b4-00c04fd430c8' });
    expect(a.key).toBe(b.key);
    expect(a).toMatchObject({ type: 'ValueError', message: 'bad value <n> for id <uuid>', sample: 'bad value 3 for id 550e8400-e29b-41d4-a716-446655440000' });
  });
});
