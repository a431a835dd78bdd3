// The answers of /api/v1/auth and /api/v1/api-keys, as the OpenAPI document
// and the dashboard read them.
import { Type, type Static } from '@sinclair/typebox';
import { Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { UserPublic } from '../users/service.ts';

const Role = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')]);

export const Me = Type.Composite(
  [
    UserPublic,
    Type.Object({
      mfa: Answer({ enrolled: Type.Boolean(), pending: Type.Boolean(), fresh: Type.Boolean() }),
      memberships: Type.Array(Answer({ project_id: Uuid, project_slug: Type.String(), project_name: Type.String(), role: Role })),
    }),
  ],
  { additionalProperties: false, $id: 'Me' },
);
export type Me = Static<typeof Me>;

export const PasswordPolicy = Answer(
  {
    min_length: Type.Integer(),
    max_length: Type.Integer(),
    required_character_classes_below_16: Type.Integer(),
    character_classes: Type.Array(Type.String()),
    common_passwords_refused: Type.Boolean(),
  },
  'PasswordPolicy',
);

export const LoginAnswer = Answer({ user: UserPublic, mfa_required: Type.Boolean() }, 'LoginAnswer');
export const UserAnswer = Answer({ user: UserPublic });

export const SessionPublic = Answer(
  {
    id: Uuid,
    issued_at: Timestamp,
    last_seen_at: Timestamp,
    expires_at: Timestamp,
    ip: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    is_current: Type.Boolean(),
  },
  'SessionPublic',
);

export const MfaStatus = Answer(
  { enrolled: Type.Boolean(), enrolled_at: Nullable(Timestamp), pending_enrolment: Type.Boolean(), remaining_recovery_codes: Type.Integer() },
  'MfaStatus',
);
export const MfaEnrolment = Answer({ secret_base32: Type.String(), provisioning_url: Type.String() }, 'MfaEnrolment');
export const RecoveryCodes = Answer({ recovery_codes: Type.Array(Type.String()) }, 'RecoveryCodes');
export const MfaVerified = Answer({ ok: Type.Literal(true), used_recovery_code: Type.Boolean(), remaining_recovery_codes: Type.Integer() }, 'MfaVerified');

export const TrustedDevice = Answer(
  {
    id: Uuid,
    label: Type.String(),
    created_at: Timestamp,
    last_seen_at: Timestamp,
    expires_at: Timestamp,
    revoked_at: Nullable(Timestamp),
    active: Type.Boolean(),
  },
  'TrustedDevice',
);

export const ApiKeyPublic = Answer(
  {
    id: Uuid,
    name: Type.String(),
    prefix: Type.String(),
    scopes: Type.Array(Type.String()),
    project_id: Nullable(Uuid),
    created_at: Timestamp,
    expires_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    last_used_ip: Nullable(Type.String()),
    revoked_at: Nullable(Timestamp),
  },
  'ApiKeyPublic',
);
export type ApiKeyPublic = Static<typeof ApiKeyPublic>;
export const ApiKeyMinted = Type.Composite([ApiKeyPublic, Type.Object({ token: Type.String() })], { additionalProperties: false, $id: 'ApiKeyMinted' });
export const Scopes = Answer({ scopes: Type.Array(Type.String()), admin_only: Type.Array(Type.String()) }, 'Scopes');
export const Revoked = Answer({ revoked: Type.Literal(true) });
export const Disabled = Answer({ disabled: Type.Literal(true) });
