// How settings are displayed by `svc config show` and /admin/settings.
// Secret-typed settings and secret-shaped names are masked; plain URL fields
// (the database URL among them) are shown as configured, as the spec says.
import type { Config, Source } from './load.ts';
import { SETTINGS, SETTING_NAMES, type SettingName } from './settings.ts';

export const MASK = '***';
const SECRET_SHAPED = /(SECRET|SECRETS|TOKEN|PASSWORD|PASS|_KEY|DSN)$/;

export const isSecretSetting = (name: SettingName): boolean =>
  Boolean(SETTINGS[name].meta.secret) || SECRET_SHAPED.test(name);

export function displayValue(name: SettingName, value: unknown, reveal = false): string {
  const text = Array.isArray(value) ? value.join(',') : String(value);
  if (!reveal && isSecretSetting(name) && text !== '') return MASK;
  return text;
}

export interface SettingView {
  name: SettingName;
  value: string;
  source: Source;
  is_secret: boolean;
  description: string;
}

export function settingsView(config: Config, sources: Record<SettingName, Source>, reveal = false): SettingView[] {
  return SETTING_NAMES.slice()
    .sort()
    .map((name) => ({
      name,
      value: displayValue(name, config[name], reveal),
      source: sources[name],
      is_secret: isSecretSetting(name),
      description: SETTINGS[name].meta.description,
    }));
}
