import { describe, expect, test } from 'bun:test';
import { randomJsonWriter } from './transport-fixtures.ts';
import { jsonFloat, toJsonValue, toPlainJson } from '../../src/transport/json-convert.ts';
import {
  canonicalJson,
  compactJson,
  compareCodePoints,
  JsonError,
  JsonFloat,
  MAX_INT_DIGITS,
  canonicalObject,
  MAX_JSON_DEPTH,
  parseJson,
  parseJsonMembers,
  pythonFloatRepr,
  type JsonObject,
  type JsonValue,
} from '../../src/transport/json.ts';

/** The canonical text of a wire value, checked to be the same whether written
 * from the parsed value or built by the parser as it reads (the verifier's way). */
function canon(wire: string): string {
  const written = canonicalJson(parseJson(wire));
  // (Wrapped in an object: one level deeper, so the deepest nesting allowed is left out.)
  if (!wire.startsWith('['.repeat(MAX_JSON_DEPTH))) expect(parseJsonMembers(`{"v":${wire}}`).members!.canons).toEqual([written]);
  return written;
}

function expectJsonError(fn: () => unknown, rule: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(JsonError);
    expect((e as Error).message).toMatch(rule);
    return;
  }
  throw new Error('expected a JsonError');
}

describe('§8.5 float canonicalisation (Python repr)', () => {
  const rows: [string, string, number][] = [
    ['1.0', '1.0', 1],
    ['12.0', '12.0', 12],
    ['0.1', '0.1', 0.1],
    ['0.0001', '0.0001', 0.0001],
    ['0.00001', '1e-05', 0.00001],
    ['0.000085', '8.5e-05', 0.000085],
    ['1000000000000000.0', '1000000000000000.0', 1e15],
    ['1e+16', '1e+16', 1e16],
    ['1.2345678901234568e+17', '1.2345678901234568e+17', 123456789012345680],
    ['1.5e+300', '1.5e+300', 1.5e300],
    ['-0.0', '-0.0', -0],
  ];
  for (const [wire, canonical, value] of rows) {
    test(`${wire} -> ${canonical}`, () => {
      expect(canon(wire)).toBe(canonical);
      expect(pythonFloatRepr(value)).toBe(canonical);
      const parsed = parseJson(wire);
      expect(parsed).toBeInstanceOf(JsonFloat);
      expect(Object.is((parsed as JsonFloat).value, value)).toBe(true);
    });
  }

  test('the big int keeps every digit', () => {
    expect(parseJson('9007199254740993')).toBe(9007199254740993n);
    expect(canon('9007199254740993')).toBe('9007199254740993');
    const big = '[-123456789012345678901234567890,18446744073709551616]';
    expect(canon(big)).toBe(big);
  });

  test('more repr edges: exponent boundaries, extremes, shortest digits', () => {
    const cases: [number, string][] = [
      [0, '0.0'],
      [9.999e-5, '9.999e-05'],
      [0.00012, '0.00012'],
      [9999999999999998, '9999999999999998.0'],
      [1e22, '1e+22'],
      [1e100, '1e+100'],
      [5e-324, '5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [0.1 + 0.2, '0.30000000000000004'],
      [-123.456, '-123.456'],
      [2.5e-7, '2.5e-07'],
      [123456789.125, '123456789.125'],
    ];
    for (const [value, text] of cases) expect(pythonFloatRepr(value)).toBe(text);
  });

  test('int and float are told apart by the lexeme, not the value', () => {
    expect(canon('[12,12.0,12e0,1E2,-0,0,-0.0]')).toBe('[12,12.0,12.0,100.0,0,0,-0.0]');
    expect(parseJson('12')).toBe(12n);
    expect(parseJson('12.0')).toEqual(new JsonFloat(12));
  });

  test('1e-999 underflows to 0.0 as in Python, negative to -0.0', () => {
    expect(canon('[1e-999,-1e-999]')).toBe('[0.0,-0.0]');
  });
});

describe('malformed numbers and literals', () => {
  test('overflowing floats, NaN and Infinity are refused', () => {
    for (const wire of ['1e999', '-1e999', '[1.8e308]', 'NaN', '{"a":NaN}', 'Infinity', '[-Infinity]']) {
      expectJsonError(() => parseJson(wire), /NaN and Infinity|out of float range/);
    }
  });

  test('grammar Python rejects is rejected', () => {
    const bad = ['', ' ', '01', '1.', '.5', '+1', '-', '1e', '0x10', '[1,]', '{"a":1,}', '{a:1}', "{'a':1}", '[1 2]', '{"a" 1}'];
    bad.push('nul', 'True', '"abc', '[1]]', '1 2', '[', '{"a":1');
    for (const wire of bad) expect(() => parseJson(wire)).toThrow(JsonError);
  });

  test('integers over 4300 digits are refused like CPython int()', () => {
    expect(canon('9'.repeat(MAX_INT_DIGITS))).toBe('9'.repeat(MAX_INT_DIGITS));
    expect(canon('-' + '9'.repeat(MAX_INT_DIGITS))).toBe('-' + '9'.repeat(MAX_INT_DIGITS));
    expectJsonError(() => parseJson('9'.repeat(MAX_INT_DIGITS + 1)), /too many digits/);
  });

  test('nesting is bounded', () => {
    expect(canon('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH))).toBe('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH));
    expectJsonError(() => parseJson('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)), /nesting too deep/);
  });

  test('only JSON whitespace is skipped; a BOM is an error', () => {
    expect(canon(' \t\r\n{ "a" : [ 1 , 2 ] }\n')).toBe('{"a":[1,2]}');
    expect(() => parseJson('\ufeff{}')).toThrow(JsonError);
    expect(() => parseJson('\v{}')).toThrow(JsonError);
    expect(() => parseJson('\u00a0{}')).toThrow(JsonError);
  });

  test('error messages give a position, not content', () => {
    expectJsonError(() => parseJson('{"secret-value": x}'), /^expecting a value at offset 17$/);
  });
});

describe('strings', () => {
  test('§8.5 escaping sample', () => {
    const value = 'café\u2028 \u0001 \t " \\ / \u{1F600}';
    const expected = '"café\u2028 \\u0001 \\t \\" \\\\ / \u{1F600}"';
    expect(canonicalJson(value)).toBe(expected);
    expect(canon(JSON.stringify(value))).toBe(expected);
    expect(canon('"caf\\u00e9\\u2028 \\u0001 \\t \\" \\\\ \\/ \\ud83d\\ude00"')).toBe(expected);
  });

  test('every control character escapes as Python does; DEL and separators stay raw', () => {
    const short: Record<number, string> = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r' };
    for (let c = 0; c < 0x20; c++) {
      const expected = short[c] ?? `\\u00${c.toString(16).padStart(2, '0')}`;
      expect(canonicalJson(String.fromCharCode(c))).toBe(`"${expected}"`);
    }
    expect(canonicalJson('\u001f')).toBe('"\\u001f"');
    expect(canonicalJson('\u007f\u0080\u2029/\ue000\uffff')).toBe('"\u007f\u0080\u2029/\ue000\uffff"');
  });

  test('raw control characters inside a string are malformed (strict json.loads)', () => {
    expectJsonError(() => parseJson('"a\nb"'), /control character/);
    expectJsonError(() => parseJson('"\u0000"'), /control character/);
  });

  test('escapes: all short forms, \\u in either case, bad ones refused', () => {
    expect(parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00E9\\u00e9"')).toBe('"\\/\b\f\n\r\té\u00e9');
    for (const wire of ['"\\x41"', '"\\u12"', '"\\u12G4"', '"\\U0041"', '"\\', '"\\u+123"', '"\\u 123"']) {
      expect(() => parseJson(wire)).toThrow(JsonError);
    }
  });

  test('lone surrogates are malformed; escaped pairs combine', () => {
    expectJsonError(() => parseJson('"\\ud800"'), /lone surrogate/);
    expectJsonError(() => parseJson('"\\udc00\\ud800"'), /lone surrogate/);
    expectJsonError(() => parseJson('{"\\ud83d":1}'), /lone surrogate/);
    expectJsonError(() => parseJson('"a\ud800"'), /lone surrogate/);
    expect(parseJson('"\\ud83d\\ude00"')).toBe('\u{1F600}');
    expect(canon('"\\ud83d\\ude00"')).toBe('"\u{1F600}"');
    expectJsonError(() => canonicalJson('x\udfff'), /lone surrogate/);
  });
});

describe('objects', () => {
  test('duplicate keys: the last one wins', () => {
    expect(canon('{"a":1,"b":2,"a":3}')).toBe('{"a":3,"b":2}');
    expect(canon('{"a":{"x":1},"a":[true]}')).toBe('{"a":[true]}');
  });

  test('keys sort by code point, not UTF-16 unit', () => {
    const keys = ['\u{1F600}', '\ue000', '\uffff', 'a', '\u00e9', 'B', '', '\u{10000}', 'ab'];
    const object = Object.fromEntries(keys.map((k, i) => [k, i]));
    expect(canonicalJson(toJsonValue(object))).toBe('{"":6,"B":5,"a":3,"ab":8,"é":4,"\ue000":1,"\uffff":2,"\u{10000}":7,"\u{1F600}":0}');
    // JS's default sort would have put the astral keys before U+E000.
    expect([...keys].sort()).not.toEqual([...keys].sort(compareCodePoints));
    expect(compareCodePoints('\u{1F600}', '\uffff')).toBeGreaterThan(0);
    expect(compareCodePoints('\uffff', '\u{1F600}')).toBeLessThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('\u{1F600}', '\u{1F601}')).toBeLessThan(0);
  });

  test('nested objects sort at every level; arrays keep order', () => {
    expect(canon('{"z":{"b":[3,{"d":1,"c":2}],"a":null},"y":false}')).toBe('{"y":false,"z":{"a":null,"b":[3,{"c":2,"d":1}]}}');
  });

  test('__proto__ is just a key', () => {
    const parsed = parseJson('{"__proto__":{"x":1},"a":2}') as JsonObject;
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":1},"a":2}');
    const plain = toPlainJson(parsed) as Record<string, unknown>;
    expect(Object.keys(plain)).toEqual(['__proto__', 'a']);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(plain, '__proto__')?.value).toEqual({ x: 1 });
  });
});

describe('building and viewing values', () => {
  test('toJsonValue: integral numbers are ints, others floats, jsonFloat forces a float', () => {
    const value = toJsonValue({ a: 1, b: 1.5, c: jsonFloat(60), d: -0, e: 10n ** 20n, f: [true, null, 'x'], g: undefined });
    expect(canonicalJson(value)).toBe('{"a":1,"b":1.5,"c":60.0,"d":0,"e":100000000000000000000,"f":[true,null,"x"]}');
  });

  test('toJsonValue refuses what would be ambiguous or not JSON', () => {
    expect(() => toJsonValue(2 ** 53)).toThrow(TypeError);
    expect(() => toJsonValue(Number.NaN)).toThrow(JsonError);
    expect(() => toJsonValue(Number.POSITIVE_INFINITY)).toThrow(JsonError);
    expect(() => jsonFloat(Number.NaN)).toThrow(JsonError);
    expect(() => toJsonValue({ when: new Date(0) } as never)).toThrow(TypeError);
    expect(() => toJsonValue([undefined] as never)).toThrow(TypeError);
    expect(() => toJsonValue(new Map() as never)).toThrow(TypeError);
  });

  test('canonicalJson refuses plain JS numbers and non-plain objects at run time', () => {
    expect(() => canonicalJson(1 as unknown as JsonValue)).toThrow(TypeError);
    expect(() => canonicalJson({ a: 1 } as unknown as JsonValue)).toThrow(TypeError);
    expect(() => canonicalJson(new Date(0) as unknown as JsonValue)).toThrow(TypeError);
  });

  test('toPlainJson: safe ints become numbers, larger ones stay bigint', () => {
    const plain = toPlainJson(parseJson('{"a":9007199254740991,"b":9007199254740992,"c":-9007199254740992,"d":12.0,"e":[1,"x"]}'));
    expect(plain).toEqual({ a: 9007199254740991, b: 9007199254740992n, c: -9007199254740992n, d: 12, e: [1, 'x'] });
  });

  test('compactJson keeps insertion order and the same number forms', () => {
    const value = toJsonValue({ v: 2, b: jsonFloat(1e16), a: 'x' });
    expect(compactJson(value)).toBe('{"v":2,"b":1e+16,"a":"x"}');
    expect(canonicalJson(value)).toBe('{"a":"x","b":1e+16,"v":2}');
  });
});

describe('canonical text built while parsing (parseJsonMembers)', () => {
  // Random values, written with random whitespace, \u escapes and duplicate keys:
  // the parser's member texts must be exactly what the writer makes of the value.
  const { wire, str, text } = randomJsonWriter(7);

  test('2,000 random objects: every member text equals the written one', () => {
    let objects = 0;
    for (let i = 0; i < 2000; i++) {
      const w = `{"k":${wire(1)},${str(text())}:${wire(0)}}`;
      const value = parseJson(w) as JsonObject;
      const { members } = parseJsonMembers(w);
      // The same keys (Object.keys lists index-like ones such as "0" first).
      expect([...members!.keys].sort()).toEqual(Object.keys(value).sort());
      expect(members!.canons).toEqual(members!.keys.map((k) => canonicalJson(value[k]!)));
      expect(canonicalObject([...members!.keys], [...members!.canons])).toBe(canonicalJson(value));
      objects++;
    }
    expect(objects).toBe(2000);
  });

  test('more than 16 keys, and keys needing escapes, sort as the writer sorts them', () => {
    const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7) % 40}`, i]));
    const odd = { '\u{1F600}': 1, '\ue000': 2, 'a"b': 3, é: 4, '': 5 };
    for (const object of [many, odd, { ...many, ...odd }]) {
      const w = JSON.stringify({ o: object });
      const { members } = parseJsonMembers(w);
      expect(members!.canons[0]).toBe(canonicalJson(toJsonValue(object)));
    }
  });

  test('an object of 100,000 keys (a frame of about 1 MiB) sorts without running out of stack', () => {
    const keys = Array.from({ length: 100_000 }, (_, i) => `k${(i * 7919) % 100_000}`);
    const w = `{"o":{${keys.map((k, i) => `"${k}":${i}`).join(',')}}}`;
    const value = parseJson(w) as JsonObject;
    expect(parseJsonMembers(w).members!.canons[0]).toBe(canonicalJson(value.o!));
  });

  test('a frame of about 1 MiB: 45,000 keys, then the last one 45,000 times more: the last value wins, read in one pass', () => {
    // (Finding each repeat by scanning the keys before it took seconds, and
    // comes before the HMAC check: the test's time limit would run out.)
    const n = 45_000;
    const distinct = Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',');
    const w = `{"type":"event_batch","o":{${distinct},${Array.from({ length: n }, (_, i) => `"k${n - 1}":${i}`).join(',')}}}`;
    expect(w.length).toBeGreaterThan(1_000_000);
    const { value, members } = parseJsonMembers(w);
    expect(members!.keys).toEqual(['type', 'o']);
    expect(members!.canons[1]).toBe(canonicalJson((value as JsonObject).o!));
    expect(members!.canons[1]).toContain(`"k${n - 1}":${n - 1},`);
  });

  test('members only for an object; errors as parseJson', () => {
    expect(parseJsonMembers('{}').members).toEqual({ keys: [], canons: [] });
    expect(parseJsonMembers(' { } ').members).toEqual({ keys: [], canons: [] });
    expect(parseJsonMembers('[1,2]').members).toBeNull();
    expect(parseJsonMembers('"x"').members).toBeNull();
    expect(() => parseJsonMembers('{"a":1} x')).toThrow(JsonError);
    expect(() => parseJsonMembers('{"a":"\\ud800"}')).toThrow(JsonError);
  });
});
