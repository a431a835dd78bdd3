// JSON-lines logs on stdout: ts, level, logger, msg, plus request_id,
// user_id, project_id and agent_id where known (bound with `.child`).
import pino, { type Logger } from 'pino';
import { nowIso } from './clock.ts';

export type { Logger };

let destination: pino.DestinationStream = pino.destination({ fd: 1, sync: true });
let level = process.env.SVC_LOG_LEVEL ?? 'info';
let root = build();
let generation = 0;

function build(): Logger {
  return pino(
    {
      level,
      base: null,
      messageKey: 'msg',
      timestamp: () => `,"ts":"${nowIso()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** A logger for one module. Modules take theirs at import time, before the
 * configuration is read, so the returned object resolves the real pino child
 * on each call and follows later level or destination changes. */
export function logger(name: string, bindings: Record<string, unknown> = {}): Logger {
  let made = -1;
  let real: Logger | undefined;
  const resolve = (): Logger => {
    if (made !== generation || !real) {
      real = root.child({ logger: name, ...bindings });
      made = generation;
    }
    return real;
  };
  return new Proxy({} as Logger, {
    get(_, prop) {
      if (prop === 'child') return (more: Record<string, unknown>) => logger(name, { ...bindings, ...more });
      const l = resolve();
      const value = Reflect.get(l, prop, l);
      return typeof value === 'function' ? value.bind(l) : value;
    },
  });
}

export function setLogLevel(next: string): void {
  if (next === level) return;
  level = next;
  root = build();
  generation++;
}

/** Tests capture log lines by pointing the root at their own stream. */
export function setLogDestination(next: pino.DestinationStream): void {
  destination = next;
  root = build();
  generation++;
}
