// The HTTPS long-poll transport: uploads (POST /api/v1/agent/events) and
// command polls (GET /api/v1/agent/commands), per session nonce, through the
// same verifier and frame router as the WebSocket.
import { Type, type Static } from '@sinclair/typebox';
import type { Server } from 'bun';
import { agentStandingOf, recordProbe, touchAgentLiveness } from '../agents/service.ts';
import { claimCommands, commandFramePayload, failUnsignable, LONGPOLL_SIGN_FAILED, quietPass } from '../commands/delivery.ts';
import { ApiError, errorResponse, jsonResponse, validationFailed } from '../http/errors.ts';
import { requestIdOf } from '../http/request.ts';
import { Answer, Nullable } from '../http/schemas.ts';
import { nowMicros } from '../lib/clock.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { describeError } from '../lib/errors.ts';
import { logger } from '../lib/log.ts';
import type { AppContext } from '../server/context.ts';
import { traceAgentUpload } from '../telemetry/index.ts';
import { admitAgent, invalidToken, noteProjectInactive, projectInactive, Refusal, screenAddress, type Admitted } from './access.ts';
import { FrameError } from './errors.ts';
import { agentHeader, identityHeaders, parseRetryContracts, parseRuntimeFeatures, parseSessionNonce, workerHeaders } from './headers.ts';
import { routeFrames } from './router.ts';
import { newFrameContext, type LongPollState } from './session-state.ts';
import type { SessionEntry } from './sessions.ts';
import { FrameSigner } from './signer.ts';
import { FrameVerifier, type VerifiedSignedFrame } from './verifier.ts';

const log = logger('agent.longpoll');

export const EVENTS_ROUTE = '/api/v1/agent/events';
export const COMMANDS_ROUTE = '/api/v1/agent/commands';
export const MAX_UPLOAD_FRAMES = 500;
export const MAX_FRAME_BYTES = 1024 * 1024;
export const MAX_ERRORS_REPORTED = 10;
export const MAX_WAIT_SECONDS = 60;
export const MAX_POLL_FRAMES = 500;


export const FrameUploadResponse = Answer(
  {
    accepted: Type.Integer(),
    rejected: Type.Integer(),
    errors: Type.Array(Type.String(), { maxItems: 10 }),
    error_code: Nullable(Type.String()),
  },
  'FrameUploadResponse',
);
export type FrameUploadResponse = Static<typeof FrameUploadResponse>;
export const CommandPullResponse = Answer({ frames: Type.Array(Type.String()) }, 'CommandPullResponse');

type Headers = Record<string, string>;

const sessionBlocked = (): ApiError =>
  new ApiError(409, 'session_invalidated', 'this session failed verification; reconnect with a fresh nonce and probe (max_frames=0)');

const fail = (request: Request, err: ApiError, headers: Headers): Response =>
  errorResponse(new ApiError(err.status, err.error, err.message, err.details, { ...err.headers, ...headers }, err.detail), requestIdOf(request));

/** Address, validation, token, project, invalidation marker and session: the part both routes share. */
async function enter(
  ctx: AppContext,
  request: Request,
  route: string,
  validate: () => ApiError | null,
  isProbe: boolean,
): Promise<{ admitted: Admitted; entry: SessionEntry<LongPollState>; headers: Headers } | Response> {
  let headers = workerHeaders();
  const screened = await screenAddress(ctx, request, route);
  if (screened instanceof Refusal) return fail(request, screened.error, headers);
  const invalid = validate();
  if (invalid) return fail(request, invalid, headers);
  const nonce = parseSessionNonce(agentHeader(request, 'session-nonce'));
  if (nonce === null) {
    return fail(request, validationFailed([{ path: 'X-SVC-Session-Nonce', message: 'must be 1 to 128 printable ASCII characters' }]), headers);
  }
  const admitted = await admitAgent(ctx, request, screened.ip, route, 'longpoll');
  if (admitted instanceof Refusal) return fail(request, admitted.error, headers);
  const agent = admitted.auth.agent;
  headers = { ...headers, ...identityHeaders(agent.id, agent.project_id) };
  const rt = ctx.agentTransport;
  if (rt.sessions.blocked(agent.id, nonce, isProbe)) return fail(request, sessionBlocked(), headers);
  const got = rt.sessions.acquire(agent.id, nonce, () => {
    const binding = { agentId: agent.id, projectId: agent.project_id, sessionId: nonce };
    const secret = rt.signingKey(agent.project_id);
    const digest = sha256Hex(`${agent.id}:${nonce}`).slice(0, 16);
    return {
      verifier: new FrameVerifier(secret, binding),
      signer: new FrameSigner(secret, binding),
      fc: newFrameContext({
        agentId: agent.id,
        projectId: agent.project_id,
        transport: 'longpoll',
        workerId: nonce === '' ? 'longpoll-legacy' : `longpoll-${digest.slice(0, 12)}`,
      }),
      label: `lp:${digest}`,
      admitted: Promise.resolve(),
    };
  });
  if ('full' in got) {
    return fail(request, new ApiError(503, 'session_registry_full', 'too many long-poll sessions; retry shortly', {}, { 'retry-after': '1' }), headers);
  }
  return { admitted, entry: got.session, headers };
}

/** POST /api/v1/agent/events */
export async function handleUpload(ctx: AppContext, request: Request, body: unknown): Promise<Response> {
  const frames = (body as { frames?: unknown } | null)?.frames;
  const validate = (): ApiError | null => {
    if (typeof body !== 'object' || body === null || !Array.isArray(frames)) {
      return validationFailed([{ path: '/frames', message: 'must be an array of 1 to 500 strings' }]);
    }
    if (frames.length < 1 || frames.length > MAX_UPLOAD_FRAMES) return validationFailed([{ path: '/frames', message: 'must hold 1 to 500 frames' }]);
    const bad = frames.findIndex((f) => typeof f !== 'string' || Buffer.byteLength(f, 'utf8') > MAX_FRAME_BYTES);
    if (bad >= 0) return validationFailed([{ path: `/frames/${bad}`, message: 'must be a string of at most 1 MiB (UTF-8)' }]);
    return null;
  };
  const entered = await enter(ctx, request, EVENTS_ROUTE, validate, false);
  if (entered instanceof Response) return entered;
  const { entry, headers } = entered;
  const rt = ctx.agentTransport;
  let ourTurnDone = (): void => {};
  const agent = entered.admitted.auth.agent;
  const span = traceAgentUpload(request, {
    transport: 'longpoll',
    agentId: agent.id,
    projectId: agent.project_id,
    requestId: requestIdOf(request),
    frames: (frames as string[]).length,
  });
  const out: FrameUploadResponse = { accepted: 0, rejected: 0, errors: [], error_code: null };
  try {
    const texts = frames as string[];
    const note = (message: string) => {
      if (out.errors.length < MAX_ERRORS_REPORTED) out.errors.push(message);
    };
    const verified: VerifiedSignedFrame[] = [];
    const indexOf: number[] = [];
    let invalidated = false;
    const { verifier } = entry.state;
    const earlier = entry.state.admitted;
    entry.state.admitted = new Promise<void>((resolve) => (ourTurnDone = resolve));
    const decoded = await rt.decoders.decodeUpload(verifier, texts, entry.state.label, nowMicros());
    await earlier;
    // An earlier upload of this session may have ended it meanwhile.
    if (rt.sessions.blocked(entry.agentId, entry.nonce, false)) return fail(request, sessionBlocked(), headers);
    // From here to the routing nothing awaits: the replay guard sees this upload's frames in order, in one go.
    for (let k = 0; k < texts.length; k++) {
      try {
        const d = decoded(k);
        if (d instanceof FrameError) throw d;
        const v = verifier.admit(d);
        // hello / hello_ack carry no HMAC here: dropped, counted accepted, never liveness.
        if (v.kind === 'handshake') out.accepted++;
        else {
          verified.push(v);
          indexOf.push(k);
        }
      } catch (e) {
        if (!(e instanceof FrameError)) throw e;
        note(`frame ${k}: ${e.message}`);
        if (e.kind === 'signature' || e.kind === 'replay') {
          out.rejected += texts.length - k;
          invalidated = true;
          break;
        }
        // A newer protocol version is authentic and re-sent; garbage would fail the same way again.
        if (e.kind === 'version') out.rejected++;
        else out.accepted++;
      }
    }
    if (invalidated) rt.sessions.invalidate(entry);
    ourTurnDone();

    const outcomes = verified.length > 0 ? await routeFrames(ctx, entry.state.fc, verified) : [];
    let revoked = false;
    outcomes.forEach((o, n) => {
      const k = indexOf[n]!;
      switch (o.kind) {
        case 'durable':
          out.accepted++;
          break;
        case 'drop':
          out.accepted++;
          note(`frame ${k}: ${o.message}`);
          break;
        case 'transient':
          out.rejected++;
          note(`frame ${k}: ${o.message}`);
          break;
        case 'upgrade_required':
          out.rejected++;
          out.error_code = 'scheduler_upgrade_required';
          note(`frame ${k}: ${o.message}`);
          break;
        case 'revoked':
          revoked = true;
      }
    });
    if (revoked) return fail(request, invalidToken(), headers);
    // Liveness: at least one signed frame passed HMAC, whatever its dispatch did.
    if (verified.length > 0 && rt.livenessDue(entry.agentId)) {
      const seen = await touchAgentLiveness(ctx.db, entry.agentId);
      if (!seen.live) return fail(request, invalidToken(), headers);
      if (seen.cameOnline) ctx.reactions.agentCameOnline(entry.agentId);
    }
    if (invalidated) {
      return fail(
        request,
        new ApiError(409, 'session_invalidated', 'a frame failed verification; the session is invalidated: reconnect with a fresh nonce and probe', { ...out }),
        headers,
      );
    }
    return jsonResponse(200, out, headers);
  } catch (e) {
    span?.fail();
    throw e;
  } finally {
    ourTurnDone();
    rt.sessions.release(entry);
    span?.end({ 'svc.frames.accepted': out.accepted, 'svc.frames.rejected': out.rejected });
  }
}

function intParam(value: string | undefined, fallback: number): number | null {
  if (value === undefined || value === '') return fallback;
  return /^-?\d{1,9}$/.test(value) ? Number(value) : null;
}

/** GET /api/v1/agent/commands?wait=<0..60>&max_frames=<0..500> */
export async function handlePoll(
  ctx: AppContext,
  request: Request,
  query: Record<string, string | undefined>,
  server: Server<unknown> | null,
): Promise<Response> {
  const wait = intParam(query.wait, 30);
  const maxFrames = intParam(query.max_frames, 50);
  const validate = (): ApiError | null => {
    const fields: { path: string; message: string }[] = [];
    if (wait === null || wait < 0 || wait > MAX_WAIT_SECONDS) fields.push({ path: '/wait', message: 'must be an integer from 0 to 60' });
    if (maxFrames === null || maxFrames < 0 || maxFrames > MAX_POLL_FRAMES) fields.push({ path: '/max_frames', message: 'must be an integer from 0 to 500' });
    return fields.length > 0 ? validationFailed(fields.map((f) => ({ location: 'query', ...f }))) : null;
  };
  const isProbe = maxFrames === 0;
  const entered = await enter(ctx, request, COMMANDS_ROUTE, validate, isProbe);
  if (entered instanceof Response) return entered;
  const { entry, headers, admitted } = entered;
  const agent = admitted.auth.agent;
  const rt = ctx.agentTransport;
  try {
    if (isProbe) {
      await recordProbe(ctx.db, agent.id, parseRuntimeFeatures(agentHeader(request, 'runtime-features')));
      return jsonResponse(200, { frames: [] }, headers);
    }
    // Bun closes requests idle for its idleTimeout; this one may wait up to 60 s.
    server?.timeout(request, wait! + 15);
    const retryEngines = parseRetryContracts(agentHeader(request, 'retry-contracts'));
    const redispatch = {
      windowSeconds: ctx.config.SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS,
      minIntervalSeconds: ctx.config.SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS,
    };
    const deadline = nowMicros() + wait! * 1_000_000;
    // The token and project are re-validated before every pass and before an empty answer.
    const refusalOf = async (s: { revoked: boolean; projectActive: boolean } | null): Promise<Response | null> => {
      if (!s || s.revoked) return fail(request, invalidToken(), headers);
      if (!s.projectActive) {
        await noteProjectInactive(ctx, agent.id, agent.project_id, admitted.ip, COMMANDS_ROUTE);
        return fail(request, projectInactive(), headers);
      }
      return null;
    };
    const standing = async (): Promise<Response | null> => refusalOf(await agentStandingOf(ctx.db, agent.id));
    // The first pass and every pass after a wake-up read the candidates and claim (three statements).
    // A re-check after a quiet wait first asks, in one statement with the agent's standing, whether
    // there is anything to claim: 2,500 waiting polls re-checking every 5 s made three statements
    // each, over a third of all a replica sent (issue 19, bench/replicas.ts), and nearly all found nothing.
    let claiming = true;
    for (;;) {
      // A command signalled while this pass reads ends the wait below at once (no wake-up falls in between).
      const mark = rt.wakeMark(agent.id);
      if (!claiming) {
        const quiet = await quietPass(ctx.db, agent.id, redispatch);
        const refused = await refusalOf(quiet);
        if (refused) return refused;
        claiming = quiet!.work;
      }
      if (claiming) {
        // Re-validated alongside the first read of candidates; nothing is claimed unless it passes.
        const check = standing();
        const gate = check.then((refused) => refused === null && !request.signal.aborted);
        const rows = await claimCommands(ctx.db, { agentId: agent.id, max: maxFrames!, retryEngines, session: entry.state.label, redispatch, gate });
        const refused = await check;
        if (refused) return refused;
        // A client that hung up has nothing claimed for it (the gate saw the abort).
        if (request.signal.aborted) return jsonResponse(200, { frames: [] }, headers);
        if (rows.length > 0) ctx.reactions.commandsChanged?.(agent.project_id, rows.map((r) => r.id));
        if (rows.length > 0) return jsonResponse(200, { frames: await signClaimed(ctx, entry.state, rows) }, headers);
      }
      const remainingMs = (deadline - nowMicros()) / 1000;
      if (remainingMs <= 0) break;
      // Woken at once by a command issued here or signalled by another process or replica
      // (transport/signals.ts), or by the 300 ms sweep of waiting polls when a signal was lost;
      // re-checks by itself every 250 ms where nothing of that runs (runtime.ts recheckMs).
      await rt.waitForSignal(agent.id, Math.min(rt.recheckMs(), remainingMs), mark);
      claiming = rt.wakeMark(agent.id) !== mark;
    }
    return (await standing()) ?? jsonResponse(200, { frames: [] }, headers);
  } finally {
    rt.sessions.release(entry);
  }
}

/** Signs claimed rows in order with the session's outbound signer; a row that
 * cannot be signed ends as failed (`longpoll sign failed`) and is left out. */
async function signClaimed(ctx: AppContext, state: LongPollState, rows: Parameters<typeof commandFramePayload>[1][]): Promise<string[]> {
  const frames: string[] = [];
  for (const row of rows) {
    try {
      frames.push(state.signer.sign('command', row.id, commandFramePayload(ctx, row)));
    } catch (e) {
      log.error({ agent_id: row.agent_id, command_id: row.id, err: describeError(e) }, 'a claimed command could not be signed');
      await failUnsignable(ctx.db, row.id, LONGPOLL_SIGN_FAILED);
    }
  }
  return frames;
}
