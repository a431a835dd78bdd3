// A real SMTP server (aiosmtpd, tests/helpers/smtp-server.py) inside the
// outbound test namespace, so the e-mail channel reaches it through the same
// policy as a real mail server. Python comes from the `smtp` venv that
// scripts/test builds from tests/api/requirements/smtp.txt.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Receiver } from './outbound-netns.ts';

const VENVS = process.env.SVC_TEST_VENVS ?? join(import.meta.dir, '../../.venv');
const PYTHON = join(VENVS, 'smtp', 'bin', 'python');

/** One accepted message as the server recorded it. */
export type SmtpMessage = {
  port: number;
  /** The client's address. */
  peer: string;
  /** TLS version, or null for a plain session. */
  tls: string | null;
  sni: string | null;
  /** The user that authenticated, or null. */
  login: string | null;
  mail_from: string;
  rcpt_tos: string[];
  /** The message as sent (headers and body). */
  data: string;
};

export type SmtpServer = { messages(): SmtpMessage[] };

/** Why the SMTP server cannot run here (beyond the namespace itself), or null. */
export function smtpUnavailable(): string | null {
  return existsSync(PYTHON)
    ? null
    : `no Python venv with aiosmtpd at ${PYTHON} (python3 -m venv .venv/smtp && .venv/smtp/bin/pip install -r tests/api/requirements/smtp.txt)`;
}

/** Starts the server in `rx`'s namespace; it stops with the receiver. Only `user`/`password` may log in. */
export async function startSmtp(rx: Receiver, user: string, password: string): Promise<SmtpServer> {
  const record = join(rx.certDir, 'smtp-messages.jsonl');
  await rx.spawn([PYTHON, join(import.meta.dir, 'smtp-server.py'), rx.certDir, record, user, password]);
  return {
    messages: () =>
      existsSync(record)
        ? readFileSync(record, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as SmtpMessage)
        : [],
  };
}
