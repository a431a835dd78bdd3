// The answer of GET /api/v1/admin/settings: every effective setting as src/config/mask.ts settingsView shows it
// (secret values masked as `***`, plain URL settings as configured), with the home directory. The dashboard's
// Settings page reads its type (web/src/api/types.ts).
import { Type } from '@sinclair/typebox';
import { Answer } from '../http/schemas.ts';

export const SettingSource = Type.Union([Type.Literal('env'), Type.Literal('config.env'), Type.Literal('secret.env'), Type.Literal('default')]);

export const SettingEntry = Answer({
  name: Type.String(),
  /** As displayed: lists joined with commas, secrets `***` unless empty. */
  value: Type.String(),
  source: SettingSource,
  is_secret: Type.Boolean(),
  description: Type.String(),
});

export const Settings = Answer({ home: Type.String(), settings: Type.Array(SettingEntry) }, 'Settings');
