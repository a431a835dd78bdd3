// The secret-comparison and MAC helpers every area relies on.
import { describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { hmacHex, safeEqual } from '../../src/lib/crypto.ts';

describe('safeEqual', () => {
  test('equal strings match; any difference at any position does not', () => {
    const mac = 'a'.repeat(64);
    expect(safeEqual(mac, mac)).toBe(true);
    for (const i of [0, 31, 63]) expect(safeEqual(mac, `${mac.slice(0, i)}b${mac.slice(i + 1)}`)).toBe(false);
  });

  test('different lengths never match, including a prefix and the empty string', () => {
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', 'a')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });

  test('non-ASCII text compares by content', () => {
    expect(safeEqual('jalapeño-🔑', 'jalapeño-🔑')).toBe(true);
    expect(safeEqual('jalapeño-🔑', 'jalapeno-🔑')).toBe(false);
    expect(safeEqual('\u00e9', 'e\u0301')).toBe(false); // same look, different code units
  });
});

describe('hmacHex', () => {
  test('agrees with node:crypto for string and byte keys, and repeated calls with one key', () => {
    const expected = (key: string | Uint8Array, msg: string) => createHmac('sha256', key).update(msg).digest('hex');
    expect(hmacHex('k1', 'message')).toBe(expected('k1', 'message'));
    expect(hmacHex('k1', 'other')).toBe(expected('k1', 'other'));
    expect(hmacHex(new Uint8Array([1, 2, 3]), 'message')).toBe(expected(new Uint8Array([1, 2, 3]), 'message'));
    expect(hmacHex('k2', 'message')).not.toBe(hmacHex('k1', 'message'));
  });

  test('one byte key used again, with and without a prefix, in turns: every MAC is right', () => {
    const key = new Uint8Array(32).fill(7);
    const expected = (msg: string) => createHmac('sha256', key).update(msg).digest('hex');
    for (let i = 0; i < 3; i++) {
      expect(hmacHex(key, `m${i}`)).toBe(expected(`m${i}`));
      expect(hmacHex(key, `m${i}`, 'svc:')).toBe(expected(`svc:m${i}`));
    }
    expect(hmacHex(new Uint8Array(32).fill(8), 'm0')).not.toBe(hmacHex(key, 'm0'));
  });
});
