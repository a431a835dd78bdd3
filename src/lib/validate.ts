// Small input checks shared by several areas.

/** Canonical e-mail: NFKC, trimmed, lower-cased; null when it is not an address. */
export function canonicalEmail(raw: string): string | null {
  const email = raw.normalize('NFKC').trim().toLowerCase();
  if (email.length > 320) return null;
  // Deliberately simple: one @, a dotless-allowed domain of labels, no spaces or control characters.
  const m = /^([^\s@"<>()[\]\\,;:\u0000-\u001f\u007f]{1,64})@([a-z0-9\u00a1-\uffff]([a-z0-9\u00a1-\uffff-]{0,61}[a-z0-9\u00a1-\uffff])?(\.[a-z0-9\u00a1-\uffff]([a-z0-9\u00a1-\uffff-]{0,61}[a-z0-9\u00a1-\uffff])?)*)$/u.exec(email);
  return m ? email : null;
}

const zones = new Set<string>(Intl.supportedValuesOf('timeZone'));
zones.add('UTC');

export const isTimeZone = (zone: string): boolean => zones.has(zone);
