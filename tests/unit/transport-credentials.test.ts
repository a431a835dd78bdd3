import { describe, expect, test } from 'bun:test';
import { hmacHex } from '../../src/lib/crypto.ts';
import {
  agentTokenHash,
  agentTokenHashes,
  deriveProjectSecret,
  hmacSecretText,
  matchAgentToken,
  mintAgentToken,
  parseBearer,
  uuidBytesLe,
} from '../../src/transport/credentials.ts';
import { purgeConfirmToken } from '../../src/transport/purge-token.ts';

const MASTER = 'z4j-test-master-secret-0123456789abcdef';
const TOKEN = 'z4j-example-agent-token-AAAAAAAAAAAAAAAAAAAAAAA';
const TOKEN_HASH = '31da94b254ece6efb5caa1e7ae29ca2caaca8683c406a15bd3bfa7dd75e690b0';

describe('§8 credential vectors', () => {
  test('8.1 plain HMAC', () => {
    expect(hmacHex('x'.repeat(32), '{"action":"retry_task","target":{"task_id":"abc"}}')).toBe(
      'fdaccd1a85eb8c85d9d23671e50b33f44c340ccb74134b3a0126e6f668df5031',
    );
  });

  test('8.2 project secret from 32 x "x"', () => {
    expect(uuidBytesLe('11223344-5566-7788-99aa-bbccddeeff00').toString('hex')).toBe('443322116655887799aabbccddeeff00');
    const secret = deriveProjectSecret('x'.repeat(32), '11223344-5566-7788-99aa-bbccddeeff00');
    expect(secret.toString('hex')).toBe('35c206032f0fe64a3356fb6bd3f8af266b4dee4305e4f82ec0e64f11e7808108');
    expect(hmacSecretText(secret)).toBe('NcIGAy8P5kozVvtr0_ivJmtN7kMF5PguwOZPEeeAgQg=');
  });

  test('8.2 project secret from the test master', () => {
    const secret = deriveProjectSecret(MASTER, '0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2f');
    expect(secret.toString('hex')).toBe('0199d155a0e97e5274dde2fa070288840d569328fdd47be28a7ac73110545083');
    expect(hmacSecretText(secret)).toBe('AZnRVaDpflJ03eL6BwKIhA1Wkyj91HviinrHMRBUUIM=');
    expect(hmacSecretText(secret)).toHaveLength(44);
  });

  test('8.3 agent token hash', () => {
    expect(agentTokenHash(MASTER, TOKEN)).toBe(TOKEN_HASH);
  });

  test('8.6 purge confirm token', () => {
    const secret = deriveProjectSecret(MASTER, '0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2f');
    expect(purgeConfirmToken(secret, 'default', 42)).toBe('c58ff5c5c82ce656e443c10804079fab6e375997329d3dc6c63335d810f90409');
    expect(purgeConfirmToken(secret, 'default', 42n)).toBe('c58ff5c5c82ce656e443c10804079fab6e375997329d3dc6c63335d810f90409');
  });
});

describe('project secrets', () => {
  test('uuid spelling does not matter; other text is refused', () => {
    const a = deriveProjectSecret(MASTER, '0B8E6F3C-1D2A-4C5B-9E8F-7A6B5C4D3E2F');
    const b = deriveProjectSecret(MASTER, '0b8e6f3c1d2a4c5b9e8f7a6b5c4d3e2f');
    expect(a.toString('hex')).toBe('0199d155a0e97e5274dde2fa070288840d569328fdd47be28a7ac73110545083');
    expect(b.toString('hex')).toBe('0199d155a0e97e5274dde2fa070288840d569328fdd47be28a7ac73110545083');
    expect(() => uuidBytesLe('my-project')).toThrow(TypeError);
    expect(() => uuidBytesLe('0b8e6f3c-1d2a-4c5b-9e8f-7a6b5c4d3e2')).toThrow(TypeError);
  });

  test('masters under 32 UTF-8 bytes are refused', () => {
    expect(() => deriveProjectSecret('x'.repeat(31), '11223344-5566-7788-99aa-bbccddeeff00')).toThrow(RangeError);
    // 16 two-byte characters are 32 bytes.
    expect(deriveProjectSecret('é'.repeat(16), '11223344-5566-7788-99aa-bbccddeeff00')).toHaveLength(32);
  });

  test('hmacSecretText pads like urlsafe_b64encode', () => {
    expect(hmacSecretText(Buffer.from([0xfb, 0xff]))).toBe('-_8=');
    expect(hmacSecretText(Buffer.from([0xfb]))).toBe('-w==');
    expect(hmacSecretText(Buffer.from([1, 2, 3]))).toBe('AQID');
  });
});

describe('agent tokens', () => {
  test('minted tokens are 43 url-safe characters and distinct', () => {
    const a = mintAgentToken();
    const b = mintAgentToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(b).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });

  test('the hash key is master bytes followed by the salt', () => {
    expect(agentTokenHash(MASTER, TOKEN)).toBe(hmacHex(`${MASTER}z4j-agent-token-v1`, TOKEN));
  });

  test('matching tries the current master, then each previous one', () => {
    const old1 = 'o'.repeat(40);
    const old2 = 'p'.repeat(40);
    const masters = { current: 'c'.repeat(40), previous: [old1, old2] };
    expect(agentTokenHashes(TOKEN, masters)).toEqual([
      agentTokenHash(masters.current, TOKEN),
      agentTokenHash(old1, TOKEN),
      agentTokenHash(old2, TOKEN),
    ]);
    expect(matchAgentToken(TOKEN, agentTokenHash(masters.current, TOKEN), masters)).toEqual({ master: 'current' });
    expect(matchAgentToken(TOKEN, agentTokenHash(old2, TOKEN), masters)).toEqual({ master: 'previous', index: 1 });
    expect(matchAgentToken(TOKEN, agentTokenHash(MASTER, TOKEN), masters)).toBeNull();
    expect(matchAgentToken(`${TOKEN}x`, agentTokenHash(masters.current, TOKEN), masters)).toBeNull();
    expect(matchAgentToken(TOKEN, TOKEN_HASH, { current: MASTER })).toEqual({ master: 'current' });
    expect(matchAgentToken(TOKEN, TOKEN_HASH.toUpperCase(), { current: MASTER })).toBeNull();
  });
});

describe('bearer header', () => {
  test('accepted forms', () => {
    expect(parseBearer(`Bearer ${TOKEN}`)).toBe(TOKEN);
    expect(parseBearer(`bearer ${TOKEN}`)).toBe(TOKEN);
    expect(parseBearer(`BEARER\t${TOKEN}`)).toBe(TOKEN);
    expect(parseBearer(`  Bearer   ${TOKEN}  `)).toBe(TOKEN);
    // Python's str.split() also splits on NBSP and U+2003.
    expect(parseBearer(`Bearer\u00a0${TOKEN}`)).toBe(TOKEN);
    expect(parseBearer(`Bearer\u2003${TOKEN}`)).toBe(TOKEN);
  });

  test('refused forms', () => {
    const refused = [null, undefined, '', '   ', 'Bearer', 'Bearer ', `Basic ${TOKEN}`, `Bearer ${TOKEN} extra`, TOKEN, `Bearer:${TOKEN}`];
    for (const header of refused) {
      expect(parseBearer(header)).toBeNull();
    }
    // U+FEFF is \s in JS but not whitespace to Python, so this is one part.
    expect(parseBearer(`Bearer\ufeff${TOKEN}`)).toBeNull();
  });
});
