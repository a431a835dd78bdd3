// Placeholder until the arq cells are described.
import type { Engine } from './engine.ts';

const pending = 'not described yet';
export const arq: Engine = {
  name: 'arq',
  app: 'arq',
  worker: () => [],
  names: { add: '', fail: '', flaky: '' },
  added: {},
  failure: /./,
  retriedEvents: [],
  cancel: { why: pending, error: /./ },
  retry: { why: pending, error: /./ },
  skip: { ws: pending, longpoll: pending },
  capabilities: [],
};
