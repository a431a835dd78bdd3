// Every SVC_* setting, declared once: type, default, range, secrecy.
// docs/configuration.md is generated from this table (`bun scripts/gen-config-docs.ts`).
import { bool, int, list, num, oneOf, str } from './declare.ts';

export const SETTINGS = {
  // --- storage ---------------------------------------------------------------
  SVC_DATABASE_URL: str({
    description:
      'Database: empty for the embedded SQLite file $SVC_HOME/svc.db, `sqlite:<path>` for another file, or a `postgres://` / `postgresql://` URL.',
  }),
  SVC_DATABASE_POOL_SIZE: int({ default: 10, min: 1, max: 200, description: 'PostgreSQL connections per process.' }),
  SVC_DATABASE_CONNECT_TIMEOUT_SECONDS: int({ default: 5, min: 1, max: 60, description: 'PostgreSQL connect timeout.' }),
  SVC_SQLITE_BUSY_TIMEOUT_MS: int({
    default: 5000,
    min: 100,
    max: 60000,
    description: 'How long a SQLite writer waits for another process holding the write lock.',
  }),

  // --- secrets (minted into $SVC_HOME/secret.env on first boot) --------------
  SVC_SECRET: str({
    description: 'Master secret: agent token hashes, per-project frame signing keys, API-key and session token hashes.',
    secret: true,
    minted: true,
    minBytes: 32,
  }),
  SVC_PREVIOUS_SECRETS: list({
    description: 'Earlier master secrets (comma-separated) still accepted when verifying agent tokens.',
    secret: true,
    itemMinBytes: 32,
    maxItems: 16,
  }),
  SVC_AUDIT_CHAIN_SECRET: str({
    description: 'Key of the audit log HMAC chain. Never the same as SVC_SECRET.',
    secret: true,
    minted: true,
    minBytes: 32,
  }),
  SVC_METRICS_AUTH_TOKEN: str({
    description: 'Bearer token gating /metrics.',
    secret: true,
    minted: true,
    minBytes: 32,
  }),

  SVC_AUDIT_CHAIN_PREVIOUS_SECRETS: list({
    description: 'Earlier audit chain keys (comma-separated), kept so rows signed before a rotation still verify.',
    secret: true,
    itemMinBytes: 32,
    maxItems: 32,
  }),

  // --- audit log ----------------------------------------------------------------
  SVC_AUDIT_RETENTION_DAYS: int({
    default: 90,
    min: 0,
    max: 36500,
    description: 'Audit rows older than this are pruned (leaving an authenticated prune point); 0 keeps them forever.',
  }),
  SVC_AUDIT_CHAIN_VERIFY_ENABLED: bool({
    default: false,
    description: 'Walk the whole audit chain on a schedule (one leader process) and export the verification metrics.',
  }),
  SVC_AUDIT_CHAIN_VERIFY_INTERVAL_SECONDS: int({
    default: 86400,
    min: 900,
    max: 604800,
    description: 'Interval of the scheduled audit chain verification.',
  }),
  SVC_AUDIT_WEBHOOK_URL: str({
    description: 'Mirror every audit row to this https URL (best effort; unset means no forwarder exists).',
    secret: true,
    maxLength: 2048,
  }),
  SVC_AUDIT_WEBHOOK_HMAC_SECRET: str({
    description: 'Key of the X-SVC-Audit-Signature header; required with SVC_AUDIT_WEBHOOK_URL.',
    secret: true,
    minBytes: 32,
  }),
  SVC_AUDIT_WEBHOOK_TIMEOUT_SECONDS: num({
    default: 10,
    min: 1,
    max: 120,
    description: 'Time allowed for one forwarded row.',
  }),
  SVC_AUDIT_WEBHOOK_BUFFER_SIZE: int({
    default: 1000,
    min: 10,
    max: 100000,
    description: 'Rows waiting to be forwarded; beyond this, new rows are dropped and counted.',
  }),
  SVC_NOTIFICATIONS_WEBHOOK_ALLOW_HTTP: bool({
    default: false,
    description: 'Allow plain http:// for outbound webhooks (the audit forwarder included). Changes only the scheme: blocked addresses stay blocked.',
  }),
  SVC_NOTIFICATIONS_TIMEOUT_SECONDS: int({
    default: 10,
    min: 1,
    max: 60,
    description: 'Time allowed for one notification send (HTTP request or SMTP conversation), and for a channel test.',
  }),

  // --- HTTP server ------------------------------------------------------------
  SVC_BIND_HOST: str({ default: '0.0.0.0', description: 'Address `svc serve` listens on (overridden by --host).' }),
  SVC_BIND_PORT: int({ default: 7700, min: 1, max: 65535, description: 'Port `svc serve` listens on (overridden by --port).' }),
  SVC_WORKERS: int({
    default: 1,
    min: 1,
    max: 64,
    description: 'Worker processes sharing the port (overridden by --workers).',
  }),
  SVC_LEADER_LEASE_SECONDS: int({
    default: 5,
    min: 2,
    max: 300,
    description:
      'Lease time of the jobs only one process or replica runs (retention, offline detection, misfires, bulk retries, audit verification): the leader renews its leases every fifth of it, another process takes them over this long after the leader stopped renewing (at once after a clean shutdown).',
  }),
  SVC_PUBLIC_URL: str({
    description: 'Address users and agents reach this service at; used in printed links. Empty derives it from host, port and TLS.',
    maxLength: 2048,
  }),
  SVC_ENVIRONMENT: oneOf(['production', 'dev'] as const, {
    default: 'production',
    description: '`dev` relaxes nothing security-relevant; it only enables dev-mode warnings in `svc doctor`.',
  }),
  SVC_ALLOWED_HOSTS: list({
    description:
      'Extra Host header values accepted besides loopback names, this machine\'s hostname, the public URL host and $SVC_HOME/allowed-hosts. `*` accepts any host.',
  }),
  SVC_DEBUG_HOST_ERRORS: bool({
    default: false,
    description: 'Name the refused host and the allow-list file in Host refusals (for setting up a proxy).',
  }),
  SVC_TRUSTED_PROXIES: list({
    description: 'Proxy addresses or CIDR ranges whose X-Forwarded-For is believed when resolving the client address.',
  }),
  SVC_TLS_CERT_FILE: str({ description: 'PEM certificate chain; with SVC_TLS_KEY_FILE, `svc serve` speaks https itself.' }),
  SVC_TLS_KEY_FILE: str({ description: 'PEM private key for SVC_TLS_CERT_FILE.' }),
  SVC_TLS_SELF_SIGNED: bool({
    default: false,
    description:
      'Serve https with a self-signed pair kept in $SVC_HOME/tls (minted on first use; its SHA-256 fingerprint is printed).',
  }),
  SVC_MAX_PAYLOAD_SIZE_BYTES: int({
    default: 65536,
    min: 1024,
    max: 16 * 1024 * 1024,
    description: 'Largest request body accepted by API routes (413 above).',
  }),
  SVC_AGENT_EVENTS_MAX_BODY_BYTES: int({
    default: 64 * 1024 * 1024,
    min: 1024 * 1024,
    max: 512 * 1024 * 1024,
    description: 'Largest long-poll upload body (413 above); each frame is separately limited to 1 MiB.',
  }),

  // --- logging, metrics -------------------------------------------------------
  SVC_LOG_LEVEL: oneOf(['debug', 'info', 'warn', 'error', 'silent'] as const, {
    default: 'info',
    description: 'Lowest level written to the JSON-lines log on stdout.',
  }),
  SVC_METRICS_PUBLIC: bool({ default: false, description: 'Serve /metrics without the bearer token.' }),

  // --- optional integrations: traces and error tracking (src/telemetry/) ------------
  SVC_OTEL_EXPORTER_OTLP_ENDPOINT: str({
    description:
      'OpenTelemetry trace export over OTLP/HTTP (JSON): the collector\'s base URL (`/v1/traces` is appended unless the path already ends with it). Empty: no tracing, and the exporter is never loaded.',
    maxLength: 2048,
    // No credentials, query or fragment in the URL: they belong in SVC_OTEL_EXPORTER_OTLP_HEADERS (a secret).
    pattern: '^(https?://[^\\s/@?#]+(/[^\\s?#]*)?)?$',
  }),
  SVC_OTEL_EXPORTER_OTLP_HEADERS: str({
    description: 'Headers sent with every trace export, `name=value` pairs separated by commas (values URL-decoded), e.g. an API key.',
    secret: true,
    maxLength: 8192,
  }),
  SVC_OTEL_TRACES_SAMPLE_RATIO: num({
    default: 1,
    min: 0,
    max: 1,
    description: 'Share of new traces recorded (a request carrying a W3C `traceparent` follows its caller\'s decision).',
  }),
  SVC_ERRORTRACK_DSN: str({
    description:
      'Error tracking: a Sentry-format DSN (`https://<key>@<host>/<project>`). Unhandled errors are sent, redacted, to its envelope endpoint. Empty: off.',
    secret: true,
    maxLength: 2048,
    pattern: '^(https?://[^\\s/@]+@[^\\s/]+/([^\\s]*/)?[0-9A-Za-z_-]+/?)?$',
  }),

  // --- agents and commands (cross-field rules in load.ts) -----------------------
  SVC_COMMAND_TIMEOUT_SECONDS: int({
    default: 60,
    min: 1,
    max: 86400,
    description: 'Time an agent has to answer a command; sent to agents as the frame\'s timeout_seconds.',
  }),
  SVC_AGENT_LONGPOLL_REDISPATCH_SECONDS: int({
    default: 60,
    min: 1,
    max: 3600,
    description: 'Window after dispatch in which a redeliverable command may be re-sent to a long-poll agent.',
  }),
  SVC_AGENT_LONGPOLL_REDISPATCH_MIN_INTERVAL_SECONDS: int({
    default: 10,
    min: 1,
    max: 3600,
    description: 'Minimum gap between re-sends of one dispatched command; strictly below the window.',
  }),
  SVC_AGENT_IP_ALLOWLIST: list({
    description:
      'When set, agent transports (long-poll routes, connect probe, WebSocket) accept only these addresses or CIDR ranges; others get 403 ip_denied before the token is read.',
  }),
  SVC_AGENT_STATUS_DISABLED: bool({
    default: false,
    description: 'Do not store agent_status samples (the agent health history); telemetry-loss warnings are still logged.',
  }),
  SVC_AGENT_OFFLINE_TIMEOUT_SECONDS: int({
    default: 30,
    min: 5,
    max: 3600,
    description: 'An online agent not heard from for this long is marked offline.',
  }),
  SVC_WS_MAX_FRAME_BYTES: int({
    default: 1048576,
    min: 8192,
    max: 33554432,
    description: 'Largest WebSocket frame accepted from an agent (close 4400 above); also sent in hello_ack.',
  }),
  SVC_WS_IDLE_TIMEOUT_SECONDS: int({
    default: 90,
    min: 15,
    max: 3600,
    description: 'A WebSocket agent that sends nothing for this long is disconnected (close 4408).',
  }),
  SVC_WS_PER_AGENT_CONCURRENCY_CAP: int({
    default: 64,
    min: 0,
    max: 10000,
    description: 'Distinct worker processes of one agent connected at once (close 4429 above); 0 turns the cap off.',
  }),
  SVC_SCHEDULE_FIRE_BUFFER_SECONDS: int({
    default: 3600,
    min: 60,
    max: 604800,
    description: 'How long a schedule.fire waits (buffered) for an online agent advertising its engine before it expires.',
  }),
  SVC_SCHEDULER_MISFIRE_GRACE_SECONDS: int({
    default: 60,
    min: 5,
    max: 3600,
    description: 'A schedule whose expected run is later than this without a fire (or a live scheduler) is recorded as misfired.',
  }),
  SVC_SCHEDULER_MISFIRE_SWEEP_SECONDS: int({
    default: 60,
    min: 0,
    max: 3600,
    description: 'Interval of the misfire detector (one leader process); 0 turns detection off.',
  }),
  SVC_SCHEDULE_CIRCUIT_BREAKER_THRESHOLD: int({
    default: 5,
    min: 0,
    max: 100,
    description: 'Consecutive failed fires that pause a schedule (disabled, also in its scheduler); 0 turns the breaker off.',
  }),
  SVC_SCHEDULE_FIRES_RETENTION_DAYS: int({
    default: 30,
    min: 1,
    max: 3650,
    description: 'Schedule fire history and misfire records older than this are pruned.',
  }),

  // --- svc's own scheduler (src/scheduler/, docs/schedules.md) ----------------------------
  // The service's side: the endpoint `svc scheduler` processes fire through (mutual TLS).
  SVC_SCHEDULER_GRPC_ENABLED: bool({
    default: false,
    description: 'Open the scheduler endpoint (HTTPS with mutual TLS, its own port) that `svc scheduler` processes read schedules from and fire them through. One process of `svc serve --workers N` holds it.',
  }),
  SVC_SCHEDULER_GRPC_BIND_HOST: str({ default: '0.0.0.0', maxLength: 255, description: 'Address the scheduler endpoint listens on.' }),
  SVC_SCHEDULER_GRPC_BIND_PORT: int({ default: 7701, min: 0, max: 65535, description: 'Port of the scheduler endpoint (0: any free port, printed at start).' }),
  SVC_SCHEDULER_GRPC_TLS_CERT: str({
    description: "PEM certificate the scheduler endpoint presents; empty: one minted from the scheduler CA in $SVC_HOME/scheduler-pki (names localhost, 127.0.0.1, this host's name and SVC_PUBLIC_URL's host).",
  }),
  SVC_SCHEDULER_GRPC_TLS_KEY: str({ description: 'PEM private key of SVC_SCHEDULER_GRPC_TLS_CERT.' }),
  SVC_SCHEDULER_GRPC_TLS_CA: str({
    description: 'PEM CA certificate(s) a scheduler\'s client certificate must chain to; empty: the scheduler CA $SVC_HOME/scheduler-pki/ca.crt (created by `svc mint-scheduler-cert` or at the first start with the endpoint on).',
  }),
  SVC_SCHEDULER_GRPC_ALLOWED_CNS: list({
    description: 'Common names of the client certificates allowed to connect: a JSON list (`["sched-a","sched-b"]`) or comma-separated. Empty refuses every scheduler.',
    maxItems: 256,
  }),
  SVC_SCHEDULER_GRPC_CN_PROJECT_BINDINGS: str({
    description: 'Optional JSON object `{"<cn>": ["<project slug>", ...]}`: a listed common name sees and fires only those projects\' schedules (a name not listed sees every project).',
    maxLength: 65536,
  }),
  SVC_SCHEDULER_GRPC_GRACE_SECONDS: num({
    default: 5,
    min: 0.1,
    max: 60,
    description: 'A fire for a run more than this many seconds in the future is refused (too_early): a scheduler whose clock runs ahead cannot fire early.',
  }),
  // The scheduler process's side (`svc scheduler`); its command-line flags win over these.
  SVC_SCHEDULER_BRAIN_GRPC_URL: str({
    description: '`svc scheduler`: URL of the service\'s scheduler endpoint, e.g. https://svc.internal:7701 (flag --brain-grpc-url).',
    maxLength: 2048,
  }),
  SVC_SCHEDULER_TLS_CERT: str({ description: '`svc scheduler`: its client certificate, PEM (minted by `svc mint-scheduler-cert`; flag --tls-cert).' }),
  SVC_SCHEDULER_TLS_KEY: str({ description: '`svc scheduler`: the client certificate\'s private key, PEM (flag --tls-key).' }),
  SVC_SCHEDULER_TLS_CA: str({ description: '`svc scheduler`: CA certificate the service\'s endpoint certificate must chain to, PEM (flag --tls-ca); empty: the system\'s trust store.' }),
  SVC_SCHEDULER_INSTANCE_ID: str({
    description: '`svc scheduler`: this instance\'s name in logs, fire rows and `status`; empty: <host>-<pid>.',
    maxLength: 128,
  }),
  SVC_SCHEDULER_SYNC_SECONDS: num({
    default: 2,
    min: 0.2,
    max: 300,
    description: '`svc scheduler`: how often it asks the service whether schedules changed (a change is picked up within this time).',
  }),
  SVC_SCHEDULER_MAX_IN_FLIGHT: int({ default: 32, min: 1, max: 1000, description: '`svc scheduler`: fires it sends to the service at once, at most.' }),
  SVC_SCHEDULER_CATCH_UP_MAX: int({
    default: 100,
    min: 1,
    max: 10000,
    description: '`svc scheduler`: a schedule with catch_up fire_all_missed fires at most this many missed runs when it comes back.',
  }),
  SVC_SCHEDULER_INFO_HOST: str({ default: '127.0.0.1', maxLength: 255, description: '`svc scheduler`: address of its status endpoint (GET /info, GET /health) that `status` and `info` read.' }),
  SVC_SCHEDULER_INFO_PORT: int({ default: 7800, min: 0, max: 65535, description: '`svc scheduler`: port of its status endpoint; 0 turns it off.' }),

  // --- identity and access ---------------------------------------------------------
  SVC_PASSWORD_MIN_LENGTH: int({ default: 12, min: 8, max: 128, description: 'Shortest password accepted (at most 256).' }),
  SVC_ARGON2_TIME_COST: int({ default: 3, min: 1, max: 10, description: 'argon2id passes per password hash.' }),
  SVC_ARGON2_MEMORY_KIB: int({ default: 65536, min: 8192, max: 1048576, description: 'argon2id memory per password hash, in KiB.' }),
  SVC_ARGON2_PARALLELISM: int({ default: 2, min: 1, max: 16, description: 'argon2id lanes per password hash.' }),
  SVC_SESSION_ABSOLUTE_LIFETIME_SECONDS: int({
    default: 604800,
    min: 3600,
    max: 31536000,
    description: 'A browser session ends this long after login, whatever its use.',
  }),
  SVC_SESSION_REMEMBER_ME_LIFETIME_SECONDS: int({
    default: 2592000,
    min: 3600,
    max: 31536000,
    description: 'Lifetime of a "keep me signed in" session (no idle timeout).',
  }),
  SVC_SESSION_IDLE_TIMEOUT_SECONDS: int({
    default: 1800,
    min: 60,
    max: 86400,
    description: 'A session unused for this long ends (not for "keep me signed in").',
  }),
  SVC_SESSION_COOKIE_SAMESITE: oneOf(['lax', 'strict'] as const, { default: 'lax', description: 'SameSite attribute of the session cookie.' }),
  SVC_LOGIN_LOCKOUT_THRESHOLD: int({
    default: 10,
    min: 3,
    max: 100,
    description: 'Consecutive failed logins that lock an account.',
  }),
  SVC_LOGIN_LOCKOUT_DURATION_SECONDS: int({ default: 900, min: 60, max: 86400, description: 'How long a locked account stays locked.' }),
  SVC_LOGIN_MIN_DURATION_MS: int({
    default: 300,
    min: 0,
    max: 2000,
    description: 'Every login answer takes at least this long, so timing does not tell which accounts exist.',
  }),
  SVC_MFA_VERIFICATION_TTL_SECONDS: int({
    default: 3600,
    min: 60,
    max: 86400,
    description: 'How long an MFA verification counts as fresh for the routes that demand one.',
  }),
  SVC_MFA_RECOVERY_CODE_COUNT: int({ default: 10, min: 5, max: 50, description: 'Recovery codes issued at MFA enrolment.' }),
  SVC_MFA_REMEMBER_DEVICE_DAYS: int({ default: 30, min: 1, max: 90, description: 'How long a remembered device skips the MFA step at login.' }),
  // --- single sign-on: OpenID Connect, trusted-proxy header, password login (src/auth/sso/) ---
  SVC_OIDC_ISSUER: str({
    description:
      'OpenID Connect provider\'s issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`). Empty: no OIDC sign-in, and nothing of it is loaded.',
    maxLength: 2048,
    pattern: '^(https?://[^\\s@?#]+)?$',
  }),
  SVC_OIDC_CLIENT_ID: str({ description: 'Client id svc is registered under at the provider.', maxLength: 512 }),
  SVC_OIDC_CLIENT_SECRET: str({ description: 'Client secret of SVC_OIDC_CLIENT_ID.', secret: true, maxLength: 2048 }),
  SVC_OIDC_TOKEN_AUTH_METHOD: oneOf(['client_secret_basic', 'client_secret_post'] as const, {
    default: 'client_secret_basic',
    description: 'How svc authenticates to the token endpoint.',
  }),
  SVC_OIDC_SCOPES: str({
    default: 'openid email profile',
    maxLength: 1024,
    pattern: '^openid( [\\x21\\x23-\\x5B\\x5D-\\x7E]+)*$',
    description: 'Scopes asked for, space-separated, starting with `openid` (add the provider\'s groups scope for group mapping).',
  }),
  SVC_OIDC_BUTTON_LABEL: str({ default: 'Sign in with SSO', maxLength: 80, description: 'Text of the sign-in page\'s SSO button.' }),
  SVC_OIDC_ALLOW_PRIVATE_PROVIDER: bool({
    default: false,
    description:
      'Let svc reach the provider (discovery, token, keys, userinfo) on loopback or private-network addresses, which the outbound policy otherwise refuses. Link-local and metadata addresses stay refused.',
  }),
  SVC_OIDC_ALLOW_HTTP: bool({ default: false, description: 'Accept an http:// issuer and endpoints (a provider on a trusted network without TLS).' }),
  SVC_OIDC_CA_FILE: str({ description: 'PEM file of the certificate authority (or the certificate) to trust for the provider, besides the system ones.' }),
  SVC_OIDC_CLOCK_SKEW_SECONDS: int({
    default: 60,
    min: 0,
    max: 300,
    description: 'Clock difference tolerated when checking an id_token\'s exp, nbf and iat.',
  }),
  SVC_OIDC_MFA_ACR_VALUES: list({
    description: 'id_token `acr` values that count as multi-factor (besides `amr` containing `mfa` or `otp`).',
    maxItems: 32,
  }),
  SVC_OIDC_GROUPS_CLAIM: str({ default: 'groups', maxLength: 128, description: 'Claim (id_token or userinfo) holding the user\'s groups.' }),
  SVC_OIDC_ADMIN_GROUPS: list({
    description: 'Groups whose members are global administrators; when set, every SSO login sets or clears is_admin by it.',
    maxItems: 64,
  }),
  SVC_OIDC_PROJECT_ROLES: list({
    description: 'Group-to-role mapping, `group:project-slug:role` entries (role viewer, operator or admin); applied at every SSO login.',
    maxItems: 256,
  }),
  SVC_SSO_AUTO_PROVISION: bool({
    default: false,
    description: 'Create an account at the first SSO or proxy sign-in of an unknown (verified) e-mail address.',
  }),
  SVC_SSO_PROVISION_PROJECTS: list({ description: 'Projects (slugs) a provisioned account joins.', maxItems: 64 }),
  SVC_SSO_PROVISION_ROLE: oneOf(['viewer', 'operator', 'admin'] as const, { default: 'viewer', description: 'Role of a provisioned account in SVC_SSO_PROVISION_PROJECTS.' }),
  SVC_AUTH_PROXY_HEADER: str({
    description:
      'Trusted-proxy sign-in: the request header carrying the user\'s e-mail address (e.g. X-Forwarded-Email). Empty: off. Believed only from SVC_AUTH_PROXY_ADDRESSES.',
    maxLength: 128,
    pattern: '^([A-Za-z0-9-]+)?$',
  }),
  SVC_AUTH_PROXY_ADDRESSES: list({ description: 'Addresses or CIDR ranges of the proxies allowed to send SVC_AUTH_PROXY_HEADER (the socket peer).' }),
  SVC_PASSWORD_LOGIN_DISABLED: bool({
    default: false,
    description: 'Refuse password sign-in (403 password_login_disabled) for everyone but SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL. Needs OIDC or the proxy header configured.',
  }),
  SVC_PASSWORD_LOGIN_BREAK_GLASS_EMAIL: str({
    description: 'The one account that may still sign in with its password while SVC_PASSWORD_LOGIN_DISABLED is on.',
    maxLength: 320,
  }),
  SVC_FIRST_BOOT_TOKEN_TTL_SECONDS: int({
    default: 900,
    min: 60,
    max: 86400,
    description: 'Lifetime of the one-shot first-boot setup token (a new one is minted and printed when it runs out).',
  }),
  SVC_FIRST_BOOT_ATTEMPTS_PER_IP: int({
    default: 30,
    min: 1,
    max: 100,
    description: 'Failed setup completions one address may make in 15 minutes (counted from audit rows, across processes).',
  }),
  SVC_BOOTSTRAP_ADMIN_EMAIL: str({ description: 'With SVC_BOOTSTRAP_ADMIN_PASSWORD: create the first admin at start instead of the setup link.' }),
  SVC_BOOTSTRAP_ADMIN_PASSWORD: str({ description: 'Password of the bootstrap admin (must pass the password policy).', secret: true }),
  SVC_VERSION_CHECK_URL: str({
    description: 'Release manifest for `svc upgrade` and the admin version check; empty turns the check off.',
    maxLength: 2048,
  }),
  SVC_UPDATE_PUBLIC_KEY: str({
    description:
      'Ed25519 public key (base64 of its 32 bytes) that must have signed the release manifest (detached, at its URL + `.sig`) before `svc upgrade --apply` installs anything; empty checks only the SHA-256 the manifest names, and then --apply needs an https manifest.',
    maxLength: 128,
  }),
  SVC_UPDATE_DOWNLOAD_TIMEOUT_SECONDS: int({
    default: 600,
    min: 10,
    max: 3600,
    description: 'Time allowed for `svc upgrade --apply` to download the new binary.',
  }),
  SVC_AGENT_HEALTH_RETENTION_DAYS: int({
    default: 7,
    min: 1,
    max: 3650,
    description: 'Agent health samples (stored agent_status frames) older than this are pruned.',
  }),

  // --- operator actions, bulk jobs and task retention (src/commands/, src/bulk/, src/tasks/retention.ts) ---
  SVC_BULK_JOB_MAX_TASKS: int({
    default: 10000,
    min: 1,
    max: 100000,
    description: 'Most tasks one bulk job takes: the filter\'s matches are frozen into that many items when the job is created (the rest are left out and the job says so).',
  }),
  SVC_BULK_RETRY_MAX_IN_FLIGHT: int({
    default: 16,
    min: 1,
    max: 1000,
    description: 'Retry commands bulk retry jobs have issued and not yet seen answered, at most: per job, and for all running jobs of a project together (the oldest job fills its slots first; the others wait and say so).',
  }),
  SVC_PURGE_CONFIRM_TTL_SECONDS: int({
    default: 120,
    min: 10,
    max: 3600,
    description: 'Lifetime of the confirm token the first purge-queue call returns (single use, bound to the project, queue and caller).',
  }),
  SVC_TASK_RETENTION_DAYS: int({
    default: 30,
    min: 0,
    max: 36500,
    description: 'Finished tasks whose finished_at is older than this are pruned with their events (tasks not finished never are), as are events of no task received before it; 0 keeps them forever.',
  }),
  SVC_TASK_RETENTION_BATCH_SIZE: int({
    default: 500,
    min: 10,
    max: 10000,
    description: 'Tasks pruned per transaction; the pruner yields between batches so ingest is never held up behind it.',
  }),
  SVC_TASK_RETENTION_INTERVAL_SECONDS: int({
    default: 600,
    min: 10,
    max: 86400,
    description: 'How often the retention leader looks for tasks past SVC_TASK_RETENTION_DAYS.',
  }),

  // --- task statistics (src/stats/, docs/tasks-stats.md) ---------------------------
  SVC_STATS_RETENTION_DAYS: int({
    default: 30,
    min: 1,
    max: 3650,
    description: 'Hourly task statistics, failure groups and their failed-task lists older than this are pruned (stats, trends and failure groups reach back this far at most; an answer whose window starts earlier says partial, with kept_since).',
  }),
  SVC_STATS_MINUTE_RETENTION_HOURS: int({
    default: 48,
    min: 25,
    max: 720,
    description: 'Per-minute task statistics are kept this long (charts with buckets under an hour, and windows of up to 24 h counted to the minute, read them).',
  }),

  // --- task explorer (src/tasks/explorer.ts, src/tasks/export.ts) ---------------------
  SVC_TASK_EXPORTS_PER_USER: int({
    default: 2,
    min: 1,
    max: 100,
    description: 'Task exports (GET .../tasks/export.csv and .ndjson) one user, API keys included, may stream at once in one svc process, each holding a database reader; the next is refused with 429 until one ends.',
  }),

  // --- live dashboard updates (src/live/, src/signals/) ------------------------------
  SVC_LIVE_MAX_CONNECTIONS_PER_USER: int({
    default: 20,
    min: 1,
    max: 1000,
    description: 'Live update streams (GET /api/v1/live: one per open dashboard tab) one user may hold in one svc process; the next is refused with 429.',
  }),
  SVC_LIVE_IDLE_TIMEOUT_SECONDS: int({
    default: 90,
    min: 30,
    max: 3600,
    description: 'A live update stream that sends nothing (the dashboard pings every 25 s) for this long is closed (4408).',
  }),
  SVC_LIVE_COALESCE_MS: int({
    default: 100,
    min: 0,
    max: 5000,
    description: 'Changes of one kind in one project within this window go out as one notice carrying all their ids (the first at once); 0 sends each change as it comes.',
  }),
} as const;

export type SettingName = keyof typeof SETTINGS;
export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];
