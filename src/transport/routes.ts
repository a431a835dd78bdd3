// The HTTP surface of the agent transports: the WebSocket upgrade at /ws/agent
// and the two long-poll routes. Everything past the surface is longpoll.ts,
// gateway.ts and the shared router.
import { Elysia } from 'elysia';
import { ApiError } from '../http/errors.ts';
import type { AppContext } from '../server/context.ts';
import { admitAgent, Refusal, screenAddress } from './access.ts';
import { AgentSocket, WS_ROUTE } from './gateway.ts';
import { COMMANDS_ROUTE, EVENTS_ROUTE, handlePoll, handleUpload } from './longpoll.ts';

/** Bun's WebSocket settings for the listening server: frames somewhat above our
 * own limit still reach us, so an oversized frame gets close 4400 rather than
 * Bun's 1009; idle connections are ours to close (4408), Bun only pings. */
export const agentWebSocketOptions = (config: AppContext['config']) => ({
  maxPayloadLength: Math.min(config.SVC_WS_MAX_FRAME_BYTES * 2, 64 * 1024 * 1024),
  idleTimeout: Math.min(config.SVC_WS_IDLE_TIMEOUT_SECONDS + 60, 960),
  sendPings: true,
  perMessageDeflate: false,
});

export const agentTransportRoutes = (ctx: AppContext) =>
  new Elysia({ detail: { tags: ['agent transports'] } })
    .get(
      WS_ROUTE,
      async ({ request, server }) => {
        const srv = server ?? ctx.server;
        if (!srv || request.headers.get('upgrade')?.toLowerCase() !== 'websocket') {
          throw new ApiError(426, 'upgrade_required', 'this endpoint speaks WebSocket', {}, { upgrade: 'websocket' });
        }
        // Refusals are close codes after the upgrade, as z4j agents expect.
        const screened = await screenAddress(ctx, request, WS_ROUTE);
        let socket: AgentSocket;
        if (screened instanceof Refusal) socket = new AgentSocket(ctx, null, { code: screened.wsCode, reason: screened.error.error });
        else {
          const admitted = await admitAgent(ctx, request, screened.ip, WS_ROUTE, 'ws');
          socket =
            admitted instanceof Refusal
              ? new AgentSocket(ctx, null, { code: admitted.wsCode, reason: admitted.error.error })
              : new AgentSocket(ctx, admitted.auth.agent, null);
        }
        if (srv.upgrade(request, { data: socket.handlers() })) return undefined as unknown as Response;
        throw new ApiError(400, 'upgrade_failed', 'the WebSocket upgrade failed');
      },
      { detail: { summary: 'Agent WebSocket (z4j protocol v2): bearer token, hello -> hello_ack, signed frames' } },
    )
    .post(EVENTS_ROUTE, ({ request, body }) => handleUpload(ctx, request, body), {
      detail: { summary: 'Long-poll upload: {frames: [signed frame text, ...]} -> {accepted, rejected, errors, error_code}' },
    })
    .get(COMMANDS_ROUTE, ({ request, query, server }) => handlePoll(ctx, request, query, server ?? ctx.server), {
      detail: { summary: 'Long-poll command pull: ?wait=0..60&max_frames=0..500 -> {frames: [signed command text, ...]}' },
    });
