// Turns Elysia/TypeBox validation failures into {location, path, message}
// entries. Messages describe the rule; submitted values are never included.
interface RawError {
  path?: string;
  message?: string;
  schema?: Record<string, unknown>;
}

function ruleOf(schema: Record<string, unknown> | undefined, fallback: string): string {
  if (!schema) return fallback;
  // Elysia wraps numeric query/params schemas in a union with their string
  // form; describe the numeric branch instead of "Expected union value".
  const branch = Array.isArray(schema.anyOf)
    ? ((schema.anyOf as Record<string, unknown>[]).find((s) => s.type === 'integer' || s.type === 'number') ?? schema)
    : schema;
  const { type, minimum, maximum, minLength, maxLength } = branch as Record<string, unknown>;
  if (type === 'integer' || type === 'number') {
    const kind = type === 'integer' ? 'an integer' : 'a number';
    if (minimum !== undefined && maximum !== undefined) return `must be ${kind} from ${minimum} to ${maximum}`;
    if (minimum !== undefined) return `must be ${kind} of at least ${minimum}`;
    if (maximum !== undefined) return `must be ${kind} of at most ${maximum}`;
    return `must be ${kind}`;
  }
  if (type === 'string') {
    if (minLength !== undefined && maxLength !== undefined) return `must be a string of ${minLength} to ${maxLength} characters`;
    if (maxLength !== undefined) return `must be a string of at most ${maxLength} characters`;
    if (minLength !== undefined) return `must be a string of at least ${minLength} characters`;
  }
  return fallback.charAt(0).toLowerCase() + fallback.slice(1);
}

export function validationFields(error: unknown): { location: string; path: string; message: string }[] {
  // Elysia's ValidationError carries the location (body, query, params,
  // headers) in `type` and every TypeBox error in `all`.
  const e = error as { type?: string; all?: RawError[] };
  const location = e.type ?? 'body';
  const all = Array.isArray(e.all) ? e.all : [];
  const seen = new Set<string>();
  const fields: { location: string; path: string; message: string }[] = [];
  for (const item of all) {
    const path = item.path === undefined || item.path === '' ? '/' : item.path;
    if (seen.has(path)) continue;
    seen.add(path);
    fields.push({ location, path, message: ruleOf(item.schema, item.message ?? 'invalid value') });
  }
  if (fields.length === 0) fields.push({ location, path: '/', message: 'invalid request' });
  return fields;
}
