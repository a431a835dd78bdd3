// The parts of `jose` single sign-on uses, behind one module that oidc.ts imports with import():
// the bundler keeps only these (not JWE, signing or key generation), and an svc that never
// signs anyone in through OpenID Connect never loads them.
export { createLocalJWKSet, jwtVerify } from 'jose';
