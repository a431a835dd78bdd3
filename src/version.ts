// Version facts of this build. `build.ts` defines SVC_BUILD_COMMIT when it
// compiles the binary; running from source reports "dev".
import pkg from '../package.json' with { type: 'json' };

declare const SVC_BUILD_COMMIT: string | undefined;

export const VERSION: string = pkg.version;
export const BUILD_COMMIT: string = typeof SVC_BUILD_COMMIT === 'string' ? SVC_BUILD_COMMIT : 'dev';
/** The agent wire protocol this service speaks (z4j protocol v2). */
export const PROTOCOL_VERSION = '2';
