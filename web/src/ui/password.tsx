// A new-password input that states the server's policy (GET /auth/policy, read once per page load).
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client.ts';
import type { PasswordPolicy } from '../api/types.ts';
import { TextField } from './form.tsx';

let policy: Promise<PasswordPolicy> | null = null;

function describe(p: PasswordPolicy | null): string {
  if (!p) return 'A long passphrase is best.';
  const classes = `under 16 characters it needs ${p.required_character_classes_below_16} of ${p.character_classes.join(', ')}`;
  return `${p.min_length} to ${p.max_length} characters; ${classes}.${p.common_passwords_refused ? ' Common passwords are refused.' : ''}`;
}

export function NewPasswordField(props: { label?: string; name: string }) {
  const [known, setKnown] = useState<PasswordPolicy | null>(null);
  useEffect(() => {
    policy ??= api.get<PasswordPolicy>('/auth/policy', undefined, { anonymous: true });
    policy.then(setKnown, () => (policy = null));
  }, []);
  return (
    <TextField
      label={props.label ?? 'Password'}
      name={props.name}
      type="password"
      autoComplete="new-password"
      required
      hint={describe(known)}
    />
  );
}
