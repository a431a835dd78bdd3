// Which methods an app serves on a path, for 405 answers with an Allow header.
import type { Elysia } from 'elysia';

const cache = new WeakMap<object, { pattern: RegExp; method: string }[]>();

function compile(path: string): RegExp {
  const body = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${body}/?$`);
}

export function methodsFor(app: Elysia<any, any, any, any, any, any, any>, path: string): string[] {
  let index = cache.get(app);
  if (!index) {
    index = app.routes.filter((r) => r.path !== '/*').map((r) => ({ pattern: compile(r.path), method: r.method.toUpperCase() }));
    cache.set(app, index);
  }
  return [...new Set(index.filter((r) => r.pattern.test(path)).map((r) => r.method))];
}
