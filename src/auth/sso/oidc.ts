// The OpenID Connect relying party: discovery, the authorization URL (code flow, PKCE S256, state
// and nonce), the code exchange, id_token verification and userinfo. Every request to the provider
// goes through the outbound guard (outbound/client.ts): https only unless SVC_OIDC_ALLOW_HTTP,
// private and loopback addresses only with SVC_OIDC_ALLOW_PRIVATE_PROVIDER, no redirects followed,
// answers capped. The JOSE library is imported at the first SSO login, so a service without SSO
// never loads it.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Config } from '../../config/load.ts';
import { ApiError } from '../../http/errors.ts';
import { nowMs } from '../../lib/clock.ts';
import { logger } from '../../lib/log.ts';
import { guardedFetch, type GuardedInit } from '../../outbound/client.ts';
import type { BlockedRange } from '../../outbound/blocked.ts';

const log = logger('sso');

type Jose = typeof import('./jose.ts');
let josePromise: Promise<Jose> | null = null;
const loadJose = (): Promise<Jose> => (josePromise ??= import('./jose.ts'));

/** Asymmetric signatures only: a symmetric (HS*) id_token would be keyed by the client secret, and `none` is never accepted. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
const JWKS_TTL_MS = 60 * 60 * 1000;
/** An unknown key id refreshes the key set at most this often. */
const JWKS_REFRESH_MIN_INTERVAL_MS = 60 * 1000;
/** An id_token is fetched seconds after it is issued; older (or newer) ones are refused. */
const ID_TOKEN_MAX_AGE_SECONDS = 600;
const MAX_ANSWER_BYTES = 256 * 1024;
/** Ranges SVC_OIDC_ALLOW_PRIVATE_PROVIDER opens; link-local (cloud metadata) and the rest stay blocked. */
const PRIVATE_RANGES: readonly BlockedRange[] = ['loopback', 'private'];

export interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  id_token_signing_alg_values_supported?: string[];
}

export type Claims = Record<string, unknown> & { sub: string };

/** A refused login; `reason` goes into the audit row and `details`. */
export class SsoRefusal extends ApiError {
  constructor(
    status: number,
    error: string,
    readonly reason: string,
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(status, error, message, { reason, ...details });
  }
}

const providerError = (reason: string, message: string) => new SsoRefusal(502, 'sso_provider_error', reason, `the identity provider could not be used: ${message}`);
const tokenInvalid = (reason: string, message: string) => new SsoRefusal(401, 'sso_token_invalid', reason, `the identity provider's id_token was refused: ${message}`);

export const base64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
export const pkceChallenge = (verifier: string): string => base64url(createHash('sha256').update(verifier).digest());

type OidcConfig = Pick<
  Config,
  | 'SVC_OIDC_ISSUER'
  | 'SVC_OIDC_CLIENT_ID'
  | 'SVC_OIDC_CLIENT_SECRET'
  | 'SVC_OIDC_TOKEN_AUTH_METHOD'
  | 'SVC_OIDC_SCOPES'
  | 'SVC_OIDC_ALLOW_PRIVATE_PROVIDER'
  | 'SVC_OIDC_ALLOW_HTTP'
  | 'SVC_OIDC_CA_FILE'
  | 'SVC_OIDC_CLOCK_SKEW_SECONDS'
>;

export class OidcClient {
  private discovery: { doc: Discovery; at: number } | null = null;
  private keys: { set: ReturnType<Jose['createLocalJWKSet']>; at: number; uri: string } | null = null;
  private lastKeyFetch = 0;
  private ca: string | undefined | null = null;

  constructor(private readonly c: OidcConfig) {}

  /** The issuer as configured, without a trailing slash unless the provider's own spelling has one. */
  get issuer(): string {
    return this.discovery?.doc.issuer ?? this.c.SVC_OIDC_ISSUER;
  }

  private fetchInit(): GuardedInit {
    if (this.ca === null) this.ca = this.c.SVC_OIDC_CA_FILE ? readFileSync(this.c.SVC_OIDC_CA_FILE, 'utf8') : undefined;
    return {
      allowHttp: this.c.SVC_OIDC_ALLOW_HTTP,
      ...(this.c.SVC_OIDC_ALLOW_PRIVATE_PROVIDER ? { allowRanges: PRIVATE_RANGES } : {}),
      ...(this.ca !== undefined ? { ca: this.ca } : {}),
      maxResponseBytes: MAX_ANSWER_BYTES,
      timeoutMs: 10_000,
    };
  }

  /** One request to the provider; JSON answers only. 4xx answers come back as such, for the caller to judge. */
  private async json(what: string, url: string, init: GuardedInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
    const r = await guardedFetch(url, { ...this.fetchInit(), ...init, headers: { accept: 'application/json', ...(init.headers as Record<string, string>) } });
    if (!r.ok) {
      log.warn({ what, reason: r.reason, err: r.message }, 'identity provider request failed');
      throw providerError(`${what}_unreachable`, `${what}: ${r.message}`);
    }
    if (r.truncated) throw providerError(`${what}_too_large`, `${what} answer exceeds ${MAX_ANSWER_BYTES} bytes`);
    let body: unknown;
    try {
      body = JSON.parse(r.body);
    } catch {
      throw providerError(`${what}_not_json`, `${what} answered HTTP ${r.status} without JSON`);
    }
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw providerError(`${what}_not_json`, `${what} answer is not a JSON object`);
    if (r.status >= 500 || (r.status >= 300 && r.status < 400)) throw providerError(`${what}_failed`, `${what} answered HTTP ${r.status}`);
    return { status: r.status, body: body as Record<string, unknown> };
  }

  /** The provider's metadata (cached an hour; its issuer must be the configured one exactly). */
  async discover(): Promise<Discovery> {
    if (this.discovery && nowMs() - this.discovery.at < DISCOVERY_TTL_MS) return this.discovery.doc;
    const url = `${this.c.SVC_OIDC_ISSUER.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const { status, body } = await this.json('discovery', url);
    if (status !== 200) throw providerError('discovery_failed', `discovery answered HTTP ${status}`);
    if (body.issuer !== this.c.SVC_OIDC_ISSUER) {
      throw providerError('discovery_issuer_mismatch', 'the discovery document names another issuer than SVC_OIDC_ISSUER');
    }
    for (const key of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) {
      if (typeof body[key] !== 'string' || !this.endpointAllowed(body[key] as string)) {
        throw providerError('discovery_invalid', `the discovery document has no usable ${key}`);
      }
    }
    if (body.userinfo_endpoint !== undefined && (typeof body.userinfo_endpoint !== 'string' || !this.endpointAllowed(body.userinfo_endpoint))) {
      throw providerError('discovery_invalid', 'the discovery document has an unusable userinfo_endpoint');
    }
    const doc = body as unknown as Discovery;
    this.discovery = { doc, at: nowMs() };
    return doc;
  }

  private endpointAllowed(raw: string): boolean {
    try {
      const u = new URL(raw);
      return u.protocol === 'https:' || (this.c.SVC_OIDC_ALLOW_HTTP && u.protocol === 'http:');
    } catch {
      return false;
    }
  }

  /** `reauthenticate`: the user must sign in at the provider again, even with a session there (prompt=login),
   * and the id_token then carries auth_time (max_age=0, OpenID Connect Core 3.1.2.1). */
  authorizationUrl(doc: Discovery, p: { state: string; nonce: string; verifier: string; redirectUri: string; reauthenticate: boolean }): string {
    const u = new URL(doc.authorization_endpoint);
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: this.c.SVC_OIDC_CLIENT_ID,
      redirect_uri: p.redirectUri,
      scope: this.c.SVC_OIDC_SCOPES,
      state: p.state,
      nonce: p.nonce,
      code_challenge: pkceChallenge(p.verifier),
      code_challenge_method: 'S256',
      ...(p.reauthenticate ? { prompt: 'login', max_age: '0' } : {}),
    };
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u.toString();
  }

  /** Trades the code (with the PKCE verifier) for tokens; the provider refuses a code used before. */
  async exchangeCode(code: string, verifier: string, redirectUri: string): Promise<{ idToken: string; accessToken: string | null }> {
    const doc = await this.discover();
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.c.SVC_OIDC_TOKEN_AUTH_METHOD === 'client_secret_post') {
      form.set('client_id', this.c.SVC_OIDC_CLIENT_ID);
      form.set('client_secret', this.c.SVC_OIDC_CLIENT_SECRET);
    } else {
      // RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
      const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${enc(this.c.SVC_OIDC_CLIENT_ID)}:${enc(this.c.SVC_OIDC_CLIENT_SECRET)}`).toString('base64')}`;
    }
    const { status, body } = await this.json('token', doc.token_endpoint, { method: 'POST', headers, body: form.toString() });
    if (status !== 200) {
      const error = typeof body.error === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(body.error) ? body.error : 'error';
      throw new SsoRefusal(400, 'sso_code_rejected', 'code_rejected', 'the identity provider refused the sign-in code (used already, expired, or not issued to svc)', {
        provider_error: error,
      });
    }
    if (typeof body.id_token !== 'string' || body.id_token.length > 64 * 1024) throw tokenInvalid('no_id_token', 'the token answer carries no id_token');
    return { idToken: body.id_token, accessToken: typeof body.access_token === 'string' ? body.access_token : null };
  }

  private async keySet(jose: Jose, doc: Discovery, refresh: boolean) {
    const now = nowMs();
    if (!refresh && this.keys && this.keys.uri === doc.jwks_uri && now - this.keys.at < JWKS_TTL_MS) return this.keys.set;
    this.lastKeyFetch = now;
    const { status, body } = await this.json('jwks', doc.jwks_uri);
    if (status !== 200 || !Array.isArray(body.keys)) throw providerError('jwks_invalid', 'the key set (jwks_uri) is not a JWK set');
    // Private members never belong in a published key set; keep only public signing keys.
    const keys = (body.keys as Record<string, unknown>[]).filter((k) => k && typeof k === 'object' && k.d === undefined && (k.use === undefined || k.use === 'sig'));
    const set = jose.createLocalJWKSet({ keys: keys as never });
    this.keys = { set, at: now, uri: doc.jwks_uri };
    return set;
  }

  /** Verifies the id_token's signature (a key of the provider's set, an asymmetric algorithm), issuer,
   * audience and authorised party, lifetime (exp, nbf, iat with SVC_OIDC_CLOCK_SKEW_SECONDS) and nonce. */
  async verifyIdToken(idToken: string, nonce: string): Promise<Claims> {
    const jose = await loadJose();
    const doc = await this.discover();
    const offered = doc.id_token_signing_alg_values_supported ?? ['RS256'];
    const algorithms = ASYMMETRIC.filter((a) => offered.includes(a));
    if (algorithms.length === 0) throw providerError('no_usable_algorithm', 'the provider signs id_tokens with no asymmetric algorithm svc accepts');
    const options = {
      issuer: doc.issuer,
      audience: this.c.SVC_OIDC_CLIENT_ID,
      algorithms,
      clockTolerance: this.c.SVC_OIDC_CLOCK_SKEW_SECONDS,
      maxTokenAge: ID_TOKEN_MAX_AGE_SECONDS,
      currentDate: new Date(nowMs()),
      requiredClaims: ['sub', 'exp', 'iat'],
    };
    let payload: Record<string, unknown>;
    try {
      try {
        ({ payload } = await jose.jwtVerify(idToken, await this.keySet(jose, doc, false), options));
      } catch (e) {
        // A key the cached set does not have: the provider may have rotated. Refetch, at most once a minute.
        if ((e as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || nowMs() - this.lastKeyFetch < JWKS_REFRESH_MIN_INTERVAL_MS) throw e;
        ({ payload } = await jose.jwtVerify(idToken, await this.keySet(jose, doc, true), options));
      }
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw joseRefusal(e);
    }
    const aud = payload.aud;
    if (Array.isArray(aud) && aud.length > 1 && payload.azp === undefined) throw tokenInvalid('azp_missing', 'several audiences and no azp claim');
    if (payload.azp !== undefined && payload.azp !== this.c.SVC_OIDC_CLIENT_ID) throw tokenInvalid('wrong_azp', 'the azp claim names another client');
    if (typeof payload.nonce !== 'string' || !timingSafeEqualText(payload.nonce, nonce)) throw tokenInvalid('nonce_mismatch', 'the nonce is not the one this login sent');
    if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 255) throw tokenInvalid('claims_invalid', 'the sub claim is missing or too long');
    return payload as Claims;
  }

  /** The userinfo answer for the access token; its `sub` must be the id_token's. */
  async userinfo(accessToken: string, sub: string): Promise<Record<string, unknown>> {
    const doc = await this.discover();
    if (!doc.userinfo_endpoint) return {};
    const { status, body } = await this.json('userinfo', doc.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}` } });
    if (status !== 200) throw providerError('userinfo_failed', `userinfo answered HTTP ${status}`);
    if (body.sub !== sub) throw tokenInvalid('userinfo_sub_mismatch', 'userinfo describes another subject than the id_token');
    return body;
  }
}

function timingSafeEqualText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** jose's failures as refusals with a precise reason. */
function joseRefusal(e: unknown): SsoRefusal {
  const err = e as { code?: string; claim?: string; message?: string };
  switch (err.code) {
    case 'ERR_JWT_EXPIRED':
      return tokenInvalid('id_token_expired', err.claim === 'iat' ? 'issued too long ago' : 'expired');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (err.claim === 'iss') return tokenInvalid('wrong_issuer', 'issued by another issuer');
      if (err.claim === 'aud') return tokenInvalid('wrong_audience', 'issued to another audience');
      if (err.claim === 'nbf' || err.claim === 'iat') return tokenInvalid('id_token_not_yet_valid', `its ${err.claim} lies in the future`);
      return tokenInvalid('claims_invalid', `claim ${String(err.claim ?? '?').slice(0, 32)} is missing or invalid`);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return tokenInvalid('alg_not_allowed', 'signed with an algorithm svc does not accept');
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return tokenInvalid('unknown_key', 'signed with a key not in the provider\'s key set');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return tokenInvalid('bad_signature', 'the signature does not verify');
    default:
      return tokenInvalid('malformed', 'not a well-formed signed JWT');
  }
}
