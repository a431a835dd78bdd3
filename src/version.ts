// Version facts of this build. `build.ts` defines SVC_BUILD_COMMIT when it
// compiles the binary; running from source reports "dev".
import pkg from '../package.json' with { type: 'json' };

declare const SVC_BUILD_COMMIT: string | undefined;

export const VERSION: string = pkg.version;
export const BUILD_COMMIT: string = typeof SVC_BUILD_COMMIT === 'string' ? SVC_BUILD_COMMIT : 'dev';
/** The agent wire protocol this service speaks (z4j protocol v2). */
export const PROTOCOL_VERSION = '2';
/** The z4j agent release line (major.minor) this build is tested against: tests/interop pins those
 * agents. A WebSocket agent compares the major.minor of hello_ack's `brain_version` with its own
 * z4j-core version and logs "version mismatch with brain ... Upgrade recommended" when they differ;
 * svc's own version (0.x) would make every current agent say so. */
export const Z4J_AGENT_LINE = '1.13';
/** hello_ack's `brain_version`: the agent line, with svc's own version as a PEP 440 local label
 * (`1.13.0+svc.0.1.0`), so an agent of another line still names what it talks to. */
export const BRAIN_VERSION = `${Z4J_AGENT_LINE}.0+svc.${VERSION}`.slice(0, 40);
