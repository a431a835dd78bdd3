// The live dashboard stream of a process: the publisher (reactions -> bus) and
// the hub (bus -> connected tabs), wired by the composition root with one call.
import { combineReactions } from '../platform/reactions.ts';
import type { AppContext } from '../server/context.ts';
import { signalsOf } from '../signals/index.ts';
import { LiveHub } from './hub.ts';
import { LivePublisher, liveReactions } from './publisher.ts';

export interface Live {
  publisher: LivePublisher;
  hub: LiveHub;
}

const lives = new WeakMap<AppContext, Live>();

/** Adds the live stream to a new context: its reactions beside the others, audit rows observed, shutdown hooked. */
export function attachLive(ctx: AppContext): Live {
  const bus = signalsOf(ctx);
  const publisher = new LivePublisher(bus, ctx.config.SVC_LIVE_COALESCE_MS);
  const hub = new LiveHub(ctx, bus);
  ctx.reactions = combineReactions(ctx.reactions, liveReactions(publisher, ctx.db));
  ctx.audit.observe((row) => ctx.reactions.auditAppended?.(row));
  ctx.lifecycle.onShutdown('live', () => {
    publisher.clear();
    hub.close();
  });
  const live = { publisher, hub };
  lives.set(ctx, live);
  return live;
}

export function liveOf(ctx: AppContext): Live {
  const live = lives.get(ctx);
  if (!live) throw new Error('liveOf: the context has no live stream (attachLive)');
  return live;
}
