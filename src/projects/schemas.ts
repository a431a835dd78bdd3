// The answers of /api/v1/projects and /api/v1/invitations.
import { Type, type Static } from '@sinclair/typebox';
import { Answer, Nullable, Timestamp, Uuid } from '../http/schemas.ts';
import { UserPublic } from '../users/service.ts';

export const RoleSchema = Type.Union([Type.Literal('viewer'), Type.Literal('operator'), Type.Literal('admin')]);

export const ProjectPublic = Answer(
  {
    id: Uuid,
    slug: Type.String(),
    name: Type.String(),
    description: Type.String(),
    is_active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    archived_at: Nullable(Timestamp),
    /** The caller's effective role. */
    role: RoleSchema,
  },
  'ProjectPublic',
);
export type ProjectPublic = Static<typeof ProjectPublic>;

/** A membership as granted or changed. */
export const Membership = Answer({ id: Uuid, user_id: Uuid, project_id: Uuid, role: RoleSchema, created_at: Timestamp, updated_at: Timestamp }, 'Membership');
/** A membership as listed, with its member's name. */
export const Member = Answer(
  {
    id: Uuid,
    user_id: Uuid,
    project_id: Uuid,
    user_email: Type.String(),
    user_display_name: Type.String(),
    role: RoleSchema,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'Member',
);
export type Member = Static<typeof Member>;

export const InvitationPublic = Answer(
  {
    id: Uuid,
    project_id: Uuid,
    email: Type.String(),
    role: RoleSchema,
    invited_by: Nullable(Uuid),
    created_at: Timestamp,
    expires_at: Timestamp,
    accepted_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
  },
  'InvitationPublic',
);
export type InvitationPublic = Static<typeof InvitationPublic>;
export const InvitationMinted = Answer({ invitation: InvitationPublic, token: Type.String(), accept_url_path: Type.String() }, 'InvitationMinted');
export const InvitationPreview = Answer(
  { email: Type.String(), role: RoleSchema, project_slug: Type.String(), project_name: Type.String(), expires_at: Timestamp },
  'InvitationPreview',
);
export type InvitationPreview = Static<typeof InvitationPreview>;
export const InvitationAccepted = Answer({ user: UserPublic, project_slug: Type.String(), role: RoleSchema }, 'InvitationAccepted');
