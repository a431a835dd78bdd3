// Identifiers are random UUID v4 strings (audit row ids included: random, not
// time-ordered, as the spec says); task rows are the one exception below.
export const newId = (): string => crypto.randomUUID();

/** A UUID v7 (time-ordered) for rows written in bulk where creation time is no
 * secret (task projections): new keys land at the end of the primary key's
 * B-tree instead of at random places in it. */
export const newTimeOrderedId = (): string => Bun.randomUUIDv7();

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: unknown): s is string => typeof s === 'string' && UUID_RE.test(s);
