// Writes docs/configuration.md from the setting declarations, so the
// reference can never drift from the code (tests/unit/docs.test.ts checks).
//   bun scripts/gen-config-docs.ts          write the file
//   bun scripts/gen-config-docs.ts --print  print it
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS, SETTING_NAMES } from '../src/config/settings.ts';

export function configurationDoc(): string {
  const rows = SETTING_NAMES.map((name) => {
    const s = SETTINGS[name];
    const schema = s.schema as Record<string, unknown>;
    const def = schema.default;
    const shownDefault = s.meta.minted ? 'minted on first boot' : Array.isArray(def) ? (def.length ? def.join(',') : '(empty)') : def === '' ? '(empty)' : String(def);
    let range = '';
    if (typeof schema.minimum === 'number') range = `${schema.minimum}..${schema.maximum}`;
    else if (Array.isArray(schema.anyOf)) range = (schema.anyOf as { const: string }[]).map((x) => x.const).join(' \\| ');
    else if (schema.type === 'boolean') range = 'true \\| false';
    else if (schema.type === 'array') range = 'comma-separated list';
    if (s.meta.minBytes) range = `at least ${s.meta.minBytes} bytes`;
    if (s.meta.itemMinBytes) range = `comma-separated, each at least ${s.meta.itemMinBytes} bytes`;
    return `| \`${name}\` | ${shownDefault} | ${range} | ${s.meta.secret ? 'yes' : ''} | ${s.meta.description.replace(/\|/g, '\\|')} |`;
  });
  return `# Configuration

Generated from \`src/config/settings.ts\` by \`bun scripts/gen-config-docs.ts\`; do not edit by hand.

Settings are read from, highest precedence first:

1. the process environment;
2. \`$SVC_HOME/config.env\` — tunables only (\`svc init\` writes a commented template; \`svc config validate <file>\` checks a candidate);
3. \`$SVC_HOME/secret.env\` — secrets only, mode 0600; \`svc serve\` mints missing secrets here on first boot;
4. the defaults below.

\`$SVC_HOME\` defaults to \`~/.svc\`. A \`.env\` file in the working directory is never read. A value that breaks its
rule stops start-up with one line naming the variable and the rule; secret values are never echoed.
\`svc config show\` prints the effective values and their sources with secrets masked (\`--reveal-secrets\` shows them).

Rules between settings:

- \`SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS\` must be strictly below \`SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS\`.
- \`SVC_COMMAND_TIMEOUT_SECONDS\` must not be below \`SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS\`.
- \`SVC_TLS_CERT_FILE\` and \`SVC_TLS_KEY_FILE\` go together; neither combines with \`SVC_TLS_SELF_SIGNED\`.
- \`SVC_AUDIT_CHAIN_SECRET\` must differ from \`SVC_SECRET\`.

Outside the table: \`SVC_HOME\` (where the files above live).

| Setting | Default | Range | Secret | Meaning |
|---|---|---|---|---|
${rows.join('\n')}
`;
}

if (import.meta.main) {
  const text = configurationDoc();
  if (process.argv.includes('--print')) process.stdout.write(text);
  else writeFileSync(join(import.meta.dir, '../docs/configuration.md'), text);
}
