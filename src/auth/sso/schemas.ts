// The answers of the single sign-on routes, as the OpenAPI document and the dashboard read them.
import { Type, type Static } from '@sinclair/typebox';
import { Answer, Nullable, Timestamp, Uuid } from '../../http/schemas.ts';

export const SsoConfig = Answer(
  {
    oidc: Answer({ enabled: Type.Boolean(), label: Type.String() }),
    proxy: Answer({ enabled: Type.Boolean() }),
    password_login: Answer({ enabled: Type.Boolean(), break_glass_only: Type.Boolean() }),
  },
  'SsoConfig',
);
export type SsoConfig = Static<typeof SsoConfig>;

export const LinkedIdentity = Answer(
  { id: Uuid, issuer: Type.String(), subject: Type.String(), email: Type.String(), created_at: Timestamp, last_login_at: Nullable(Timestamp) },
  'LinkedIdentity',
);
export const LinkedIdentities = Answer(
  {
    identities: Type.Array(LinkedIdentity),
    /** Whether this account can also sign in with a password (it has one, and password sign-in is on for it). */
    password_sign_in: Type.Boolean(),
  },
  'LinkedIdentities',
);
export type LinkedIdentities = Static<typeof LinkedIdentities>;

/** A redirect (302 or 303): no body; Location says where. */
export const Redirect = Type.Null({ description: 'no body; the Location header names the next page' });
