// The HTTP surface of the agent transports: the WebSocket upgrade at /ws/agent
// and the two long-poll routes. Everything past the surface is longpoll.ts,
// gateway.ts and the shared router.
import { Type } from '@sinclair/typebox';
import { Elysia } from 'elysia';
import { contract } from '../http/contract.ts';
import { ApiError } from '../http/errors.ts';
import { requestIdOf } from '../http/request.ts';
import type { AppContext } from '../server/context.ts';
import { admitAgent, Refusal, screenAddress } from './access.ts';
import { AgentSocket, WS_ROUTE } from './gateway.ts';
import { CommandPullResponse, COMMANDS_ROUTE, EVENTS_ROUTE, FrameUploadResponse, handlePoll, handleUpload } from './longpoll.ts';

/** Bun's WebSocket settings for the listening server: frames somewhat above our
 * own limit still reach us, so an oversized frame gets close 4400 rather than
 * Bun's 1009; idle connections are ours to close (4408), Bun only pings. */
export const agentWebSocketOptions = (config: AppContext['config']) => ({
  maxPayloadLength: Math.min(config.SVC_WS_MAX_FRAME_BYTES * 2, 64 * 1024 * 1024),
  idleTimeout: Math.min(config.SVC_WS_IDLE_TIMEOUT_SECONDS + 60, 960),
  sendPings: true,
  perMessageDeflate: false,
});

const AGENT = { agent: true } as const;
/** What every agent request may be refused with (address, token, rate, project), besides its own. */
const AGENT_REFUSALS = { 401: ['invalid_agent_token'], 403: ['ip_denied', 'project_inactive'], 429: ['rate_limited'] } as const;
const SessionHeaders = Type.Object({
  'x-svc-session-nonce': Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'fresh per connect; X-Z4J-Session-Nonce also accepted' })),
});
const PollHeaders = Type.Object({
  ...SessionHeaders.properties,
  'x-svc-runtime-features': Type.Optional(Type.String({ description: 'comma-separated feature names; read on the connect probe' })),
  'x-svc-retry-contracts': Type.Optional(Type.String({ description: 'comma-separated engine=1 pairs' })),
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
              : new AgentSocket(ctx, admitted.auth.agent, null, requestIdOf(request));
        }
        if (srv.upgrade(request, { data: socket.handlers() })) return undefined as unknown as Response;
        throw new ApiError(400, 'upgrade_failed', 'the WebSocket upgrade failed');
      },
      {
        ...contract({
          summary: 'Agent WebSocket (z4j protocol v2): bearer token, hello -> hello_ack, signed frames; refusals are close codes after the upgrade',
          access: AGENT,
          ok: Type.Null(),
          status: 101,
          errors: { 400: ['upgrade_failed'], 426: ['upgrade_required'] },
        }),
      },
    )
    .post(EVENTS_ROUTE, ({ request, body }) => handleUpload(ctx, request, body), {
      ...contract({
        summary: 'Long-poll upload: signed frames in, how many were accepted and rejected out',
        access: AGENT,
        checkedByHandler: {
          body: Type.Object({ frames: Type.Array(Type.String({ maxLength: 1024 * 1024 }), { minItems: 1, maxItems: 500 }) }, { additionalProperties: false }),
          headers: SessionHeaders,
        },
        ok: FrameUploadResponse,
        errors: { ...AGENT_REFUSALS, 409: ['session_invalidated'], 503: ['session_registry_full'] },
      }),
    })
    .get(COMMANDS_ROUTE, ({ request, query, server }) => handlePoll(ctx, request, query, server ?? ctx.server), {
      ...contract({
        summary: 'Long-poll command pull: waits up to `wait` seconds for commands; max_frames=0 is the non-claiming connect probe',
        access: AGENT,
        checkedByHandler: {
          query: Type.Object({
            wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60, default: 30 })),
            max_frames: Type.Optional(Type.Integer({ minimum: 0, maximum: 500, default: 50 })),
          }),
          headers: PollHeaders,
        },
        ok: CommandPullResponse,
        errors: { ...AGENT_REFUSALS, 409: ['session_invalidated'], 503: ['session_registry_full'] },
      }),
    });
