// Small pieces of the channel types' validate(): field errors (paths under
// /config, a message describing the rule, never the submitted value) and the
// verdict they add up to.
import type { FieldError } from '../../http/errors.ts';
import type { ValidationResult } from './base.ts';

export const field = (path: string, message: string, code: string): FieldError => ({ path, message, code });

/** The JSON pointer of a config field, e.g. configPath('headers', 'X-Team') = /config/headers/X-Team. */
export const configPath = (...segments: string[]): string =>
  `/config/${segments.map((s) => s.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

export const verdict = <C>(config: C, fields: FieldError[]): ValidationResult<C> =>
  fields.length === 0 ? { ok: true, config } : { ok: false, fields };

/** CR, LF and the other control characters (tab excepted): they would split or forge a header line. */
export const hasControl = (text: string): boolean => /[\u0000-\u0008\u000a-\u001f\u007f]/.test(text);
