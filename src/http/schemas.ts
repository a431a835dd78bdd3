// Request body schemas are closed: a field the route does not know is a 422,
// so a typo ("displayname") or a smuggled field never passes unnoticed. The
// one exception the spec makes (PATCH /users/{id} ignores unknown fields)
// opts in with additionalProperties: true and picks its fields explicitly.
// (With Elysia's normalize off, an object schema without that flag is closed
// too; Body() says so explicitly.)
import { Type, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';

export const Body = <T extends TProperties>(props: T): TObject<T> => Type.Object(props, { additionalProperties: false });

/** Answer fields, as the OpenAPI document describes them. */
export const Uuid = Type.String({ format: 'uuid' });
/** ISO 8601 UTC with microseconds (`2026-11-22T05:31:24.123456+00:00`). */
export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
/** A closed answer object, named in the document's components when `$id` is given. */
export const Answer = <T extends TProperties>(props: T, $id?: string): TObject<T> =>
  Type.Object(props, { additionalProperties: false, ...($id ? { $id } : {}) });
/** Any JSON object (payloads and metadata whose keys svc does not fix). */
export const AnyObject = Type.Record(Type.String(), Type.Unknown());
/** A project's slug in a path (the example is the project first boot creates). */
export const ProjectSlug = Type.String({ minLength: 1, maxLength: 63, examples: ['default'] });
/** An e-mail address (the service checks it further and folds its case). */
export const Email = Type.String({ minLength: 3, maxLength: 320, format: 'email' });
/** The path parameters of a project's routes. */
export const ProjectPath = Type.Object({ slug: ProjectSlug });
