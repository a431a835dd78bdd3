// Request body schemas are closed: a field the route does not know is a 422,
// so a typo ("displayname") or a smuggled field never passes unnoticed. The
// one exception the spec makes (PATCH /users/{id} ignores unknown fields)
// opts in with additionalProperties: true and picks its fields explicitly.
// (With Elysia's normalize off, an object schema without that flag is closed
// too; Body() says so explicitly.)
import { Type, type TObject, type TProperties } from '@sinclair/typebox';

export const Body = <T extends TProperties>(props: T): TObject<T> => Type.Object(props, { additionalProperties: false });
