// Settings: a zod schema over CONFIG_FILE plus the environment of docs/decisions.md section 1 (environment wins).
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ConfigError, formatZodIssue, reasonOf } from './errors.js';
import { parseCidr } from './cidr.js';
import { parseCredentialKeys } from './credential-keys.js';
import { parseJwtKeys } from './jwt-keys.js';

const port = z.coerce.number().int().min(0).max(65535);
const csv = z.string().transform((s) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean),
);

export const settingsSchema = z
  .object({
    PORT: port.default(8080),
    BACKEND_PORT: port.default(8081),
    ADMIN_PORT: port.default(9090),
    // The admin HTTP API and console (src/admin-api/): off unless set; bound to ADMIN_API_HOST.
    ADMIN_API_PORT: port.optional(),
    // The decision service (src/decision/, docs/forward-auth.md): keygate deciding for another proxy
    // (nginx auth_request, Traefik ForwardAuth, Envoy's HTTP external authorization, the verify API) on
    // DECISION_PORT, and Envoy's gRPC external authorization on DECISION_GRPC_PORT; each off unless set.
    DECISION_PORT: port.optional(),
    DECISION_GRPC_PORT: port.optional(),
    DECISION_HOST: z.string().min(1).default('0.0.0.0'),
    HOST: z.string().min(1).default('0.0.0.0'),
    // The operations listener's and the admin API's bind addresses: loopback unless opened (0.0.0.0), as
    // they answer metrics, probes, and with a token, every key. WORKERS' private ones are always on loopback.
    ADMIN_HOST: z.string().min(1).default('127.0.0.1'),
    ADMIN_API_HOST: z.string().min(1).default('127.0.0.1'),
    // Connection bounds (src/ops/connection-limits.ts); unset, derived from the descriptor limit.
    GATEWAY_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).optional(),
    GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).optional(),
    ADMIN_API_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).optional(),
    ADMIN_API_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).optional(),
    // Connections the operations listener holds at once (src/ops/ops-server.ts): it shares the gateway's event loop.
    ADMIN_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(10_000).default(32),
    UPSTREAM_URL: z.string().url().default('http://127.0.0.1:8081'),
    DATABASE_URL: z.string().url().optional(),
    // The role the programs connect as when it owns nothing (deploy/README.md, Two database roles):
    // `keygate migrate`, run as the schema's owner, grants it what the programs need.
    DATABASE_APP_ROLE: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a PostgreSQL role name (lower case letters, digits, _)')
      .optional(),
    DATA_DIR: z.string().min(1).default('.data'),
    REDIS_URL: z.string().url().optional(),
    REDIS_CLUSTER_NODES: csv.optional(),
    // Redis Sentinel: the sentinels (host:port), the name of the primary they watch, the sentinels'
    // own password and the password of the primary and its replicas (src/limits/redis/client.ts).
    REDIS_SENTINELS: csv.optional(),
    REDIS_SENTINEL_NAME: z.string().min(1).max(128).optional(),
    REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
    REDIS_PASSWORD: z.string().min(1).optional(),
    REDIS_KEY_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9:_-]{1,32}$/, 'must be 1 to 32 of [A-Za-z0-9:_-]')
      .default('kg:'),
    SEED_FILE: z.string().min(1).optional(),
    // Checked by building the gateway's own matcher, so the rule of a valid entry lives in one place.
    TRUST_PROXY: csv
      .superRefine((cidrs, ctx) => {
        try {
          cidrs.forEach(parseCidr);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message.replace(/^TRUST_PROXY: /, '') });
        }
      })
      .default([]),
    GATEWAY_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    INTERNAL_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    // Comma-separated id:base64key (32 bytes), the first current: seals stored mailbox credentials (src/config/credential-keys.ts).
    CREDENTIAL_KEYS: z
      .string()
      .superRefine((text, ctx) => {
        try {
          parseCredentialKeys(text);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
        }
      })
      .optional(),
    RATE_LIMIT_FAILURE_MODE: z.enum(['open', 'closed']).default('open'),
    // How often each gateway instance checkpoints the months' quota counts to the database (src/limits/
    // month-checkpoint.ts): what a Redis that loses them can over-admit grows with it.
    MONTH_CHECKPOINT_MS: z.coerce.number().int().min(100).max(300_000).default(5_000),
    // Rate limits and quotas refuse (enforce) or only log and count what they would refuse (shadow);
    // a plan's or a route's own limitMode wins (src/gateway/shadow.ts).
    RATE_LIMIT_MODE: z.enum(['enforce', 'shadow']).default('enforce'),
    // The identity the gateway sends upstream (docs/decisions.md section 5 HMAC headers, a JWT, or both):
    // src/http/identity-jwt.ts.
    IDENTITY_FORMAT: z.enum(['hmac', 'jwt', 'both']).default('hmac'),
    IDENTITY_JWT_HEADER: z.enum(['authorization', 'x-gateway-jwt']).default('x-gateway-jwt'),
    IDENTITY_JWT_KEYS: z
      .string()
      .transform((text, ctx) => {
        try {
          return parseJwtKeys(text);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
          return z.NEVER;
        }
      })
      .optional(),
    IDENTITY_JWT_AUDIENCE: z.string().min(1).max(256).optional(),
    // The reference backend behind another proxy that keygate's decision service authorizes (docs/forward-auth.md):
    // `accept` takes a body under a decision's signature, which is made without it (src/verifier acceptUnsignedBody).
    BACKEND_UNSIGNED_BODY: z.enum(['refuse', 'accept']).default('refuse'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    // The gateway's access log line per request, at info (src/ops/logger.ts accessLogFields).
    ACCESS_LOG: z.enum(['on', 'off']).default('on'),
    UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
    // Host-name targets of the services (docs/services.md) are resolved by this DNS server instead of
    // the system's resolver: an address and port (node's resolver takes no host name there).
    UPSTREAM_DNS_SERVER: z
      .string()
      .regex(
        /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:.]+\]):\d{1,5}$/,
        'must be an IP address and port: 10.0.0.10:53 or [fd00::a]:53',
      )
      .optional(),
    // Longer request targets are answered 414 before any step (src/gateway/guards/canonical.ts); at most
    // 14 KiB, since the whole forwarded head must fit the upstream's (Node's default: 16 KiB).
    REQUEST_TARGET_MAX_BYTES: z.coerce.number().int().min(256).max(14_336).default(8192),
    BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(1024 * 1024),
    REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().positive().default(900),
    DB_QUERY_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
    // How long the audit trail keeps its rows (src/access/service/audit.ts); the backend purges hourly.
    AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
    // The usage history (src/access/usage/, docs/usage.md, Storage): counts per key and outcome, written every
    // USAGE_FLUSH_MS (jittered); minute rows kept USAGE_MINUTE_DAYS, hour rows USAGE_HOUR_DAYS, day rows USAGE_DAY_DAYS.
    USAGE_HISTORY: z.enum(['on', 'off']).default('on'),
    USAGE_FLUSH_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
    USAGE_MINUTE_DAYS: z.coerce.number().int().min(1).max(90).default(7),
    USAGE_HOUR_DAYS: z.coerce.number().int().min(1).max(3_660).default(90),
    USAGE_DAY_DAYS: z.coerce.number().int().min(1).max(36_500).default(400),
    // Events and webhooks (docs/events.md): the delivery loop of each gateway process, its send timeout,
    // sends at once and outbox poll; key.expiring's lead, the monthly quota's thresholds (percentages),
    // the expiry scan's period and how long events are kept (past a month: a threshold's once-a-month mark).
    WEBHOOKS_DELIVERY: z.enum(['on', 'off']).default('on'),
    WEBHOOKS_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
    WEBHOOKS_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(8),
    WEBHOOKS_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
    EVENTS_KEY_EXPIRING_DAYS: z.coerce.number().int().min(1).max(365).default(7),
    EVENTS_QUOTA_THRESHOLDS: csv
      .pipe(z.array(z.string().regex(/^([1-9][0-9]{0,2}|1000)$/, 'each must be a percentage from 1 to 1000')))
      .transform((list) => list.map(Number))
      .default([80, 100]),
    EVENTS_SCAN_MS: z.coerce.number().int().min(10).max(3_600_000).default(60_000),
    EVENTS_RETENTION_DAYS: z.coerce.number().int().min(40).max(3_650).default(90),
    DRAIN_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    // The gateway on this many processes sharing PORT (src/ops/cluster.ts); auto: the cores available.
    WORKERS: z
      .string()
      .regex(/^(auto|[1-9][0-9]{0,2})$/, 'must be a number of processes from 1 to 999, or auto')
      .default('1'),
    UPSTREAM_MAX_SOCKETS: z.coerce.number().int().positive().default(256),
    // The HTTP client to the upstreams: the lean one (src/gateway/upstreams/lean-pool.ts: 5 to 15 % less CPU
    // per request of the gateway, bench/RESULTS.md 2026-12-05), or undici's Pool.
    UPSTREAM_CLIENT: z.enum(['undici', 'lean']).default('lean'),
    // WebSocket tunnels (src/gateway/websocket.ts): an open tunnel's key is checked again this often (a
    // revoked key's tunnels close within it and a second); how many tunnels may be open at once (unset:
    // a quarter of the gateway's connection share, src/ops/connection-limits.ts defaultTunnelBound).
    WEBSOCKET_RECHECK_MS: z.coerce.number().int().min(50).max(300_000).default(5_000),
    WEBSOCKET_MAX_TUNNELS: z.coerce.number().int().min(1).max(1_000_000).optional(),
    BODY_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    BODY_BUFFER_MAX_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(64 * 1024 * 1024),
    // Within BODY_BUFFER_MAX_BYTES, what the bodies of one key and of one client address may hold at
    // once (src/gateway/body-budget.ts bodySharesOf); unset: an eighth and a quarter of it, at least one body.
    BODY_BUFFER_KEY_MAX_BYTES: z.coerce.number().int().positive().optional(),
    BODY_BUFFER_ADDRESS_MAX_BYTES: z.coerce.number().int().positive().optional(),
    // A refused upload's connection is read and discarded after its answer for at most this long and
    // this many bytes before it closes, so that a client still sending reads the answer (RFC 9112 9.6).
    LINGER_TIME_MS: z.coerce.number().int().nonnegative().default(5_000),
    LINGER_MAX_BYTES: z.coerce
      .number()
      .int()
      .nonnegative()
      .default(64 * 1024 * 1024),
    CORS_ORIGINS: csv
      .pipe(
        z.array(
          z
            .string()
            .regex(/^(\*|https?:\/\/[^/\s]+)$/, 'each entry must be * or an origin like https://app.example.com'),
        ),
      )
      .default([]),
    // The access contract the gateway serves, and the CLI and the admin API make keys for (docs/profiles.md).
    PROFILE_FILE: z.string().min(1).default('profiles/workspace.yaml'),
    PLANS_FILE: z.string().min(1).default('config/plans.json'),
    ROUTES_FILE: z.string().min(1).default('config/routes.json'),
    // The API descriptions served at GET /v2/openapi.json and /v1/openapi.json (written by npm run openapi).
    OPENAPI_DIR: z.string().min(1).default('config/openapi'),
    WARMUP_BANDS_FILE: z.string().min(1).default('config/warmup-bands.json'),
    GOOGLE_PROFILE_URL: z.string().url().default('https://gmail.googleapis.com/gmail/v1/users/me/profile'),
    MICROSOFT_PROFILE_URL: z.string().url().default('https://graph.microsoft.com/v1.0/me'),
    GOOGLE_ADMIN_URL: z.string().url().default('https://admin.googleapis.com'),
    MICROSOFT_GRAPH_URL: z.string().url().default('https://graph.microsoft.com'),
    DNS_RESOLVER: z.string().optional(),
    GOOGLE_OAUTH_CLIENT_ID: z.string().min(1).optional(),
    MICROSOFT_OAUTH_CLIENT_ID: z.string().min(1).optional(),
    OAUTH_REDIRECT_URI: z.string().url().optional(),
  })
  .strict();

export type Settings = z.infer<typeof settingsSchema>;
export type Mode = 'start' | 'gateway' | 'backend' | 'migrate' | 'seed';

const KNOWN = Object.keys(settingsSchema.shape);

/**
 * Read settings from an optional JSON config file and the environment. Throws ConfigError with one
 * line naming the offending setting.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, mode: Mode = 'start'): Settings {
  let fromFile: Record<string, unknown> = {};
  if (env.CONFIG_FILE) {
    try {
      fromFile = JSON.parse(readFileSync(env.CONFIG_FILE, 'utf8'));
    } catch (err) {
      const reason = reasonOf(err) ?? 'not valid JSON';
      throw new ConfigError(`setting CONFIG_FILE: cannot read ${env.CONFIG_FILE} (${reason})`);
    }
    if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
      throw new ConfigError(`setting CONFIG_FILE: ${env.CONFIG_FILE} must hold a JSON object`);
    }
  }
  const merged: Record<string, unknown> = { ...fromFile };
  for (const k of KNOWN) {
    const v = env[k];
    if (v !== undefined && v !== '') merged[k] = v;
  }
  // Numbers and lists in the file are given as JSON values; the schema expects the env's text form.
  for (const [k, v] of Object.entries(merged)) {
    if (typeof v === 'number' || typeof v === 'boolean') merged[k] = String(v);
    if (Array.isArray(v)) merged[k] = v.every((x) => typeof x !== 'object') ? v.join(',') : JSON.stringify(v);
    else if (typeof v === 'object' && v !== null) merged[k] = JSON.stringify(v); // IDENTITY_JWT_KEYS as a JWK Set
  }
  const parsed = settingsSchema.safeParse(merged);
  if (!parsed.success) throw new ConfigError(formatZodIssue('setting', parsed.error.issues[0]));
  const s = parsed.data;
  if (mode === 'gateway' || mode === 'backend') {
    if (!s.DATABASE_URL) throw new ConfigError('setting DATABASE_URL: required for `npm run ' + mode + '`');
    if (!s.GATEWAY_SECRET) throw new ConfigError('setting GATEWAY_SECRET: required for `npm run ' + mode + '`');
    if (mode === 'backend' && !s.INTERNAL_TOKEN)
      throw new ConfigError('setting INTERNAL_TOKEN: required for `npm run backend`');
    if (mode === 'backend' && !s.CREDENTIAL_KEYS)
      throw new ConfigError('setting CREDENTIAL_KEYS: required for `npm run backend`');
  }
  if (s.REDIS_SENTINELS?.length && !s.REDIS_SENTINEL_NAME)
    throw new ConfigError(
      'setting REDIS_SENTINEL_NAME: required with REDIS_SENTINELS (the name of the primary the sentinels watch)',
    );
  if (s.REDIS_SENTINELS?.length && s.REDIS_CLUSTER_NODES?.length)
    throw new ConfigError('setting REDIS_SENTINELS: give either REDIS_SENTINELS or REDIS_CLUSTER_NODES, not both');
  // Several gateway processes keep one budget only in a shared store: in-memory limits would be per process.
  if ((mode === 'gateway' || mode === 'start') && s.WORKERS !== '1') {
    if (!s.REDIS_URL && !s.REDIS_CLUSTER_NODES?.length && !s.REDIS_SENTINELS?.length)
      throw new ConfigError(
        `setting WORKERS: ${s.WORKERS} needs REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS (in-memory rate limits cannot be exact across processes)`,
      );
    if (mode === 'start' && !s.DATABASE_URL)
      throw new ConfigError(
        `setting WORKERS: ${s.WORKERS} needs DATABASE_URL in all-in-one (the gateway processes share the database; DATA_DIR is one process's)`,
      );
  }
  // A share below one body's limit would refuse every body between the two, whatever the load.
  for (const name of ['BODY_BUFFER_KEY_MAX_BYTES', 'BODY_BUFFER_ADDRESS_MAX_BYTES'] as const) {
    const v = s[name];
    if (v !== undefined && v < s.BODY_LIMIT_BYTES)
      throw new ConfigError(`setting ${name}: must be at least BODY_LIMIT_BYTES (${s.BODY_LIMIT_BYTES})`);
  }
  if (mode === 'gateway' && s.IDENTITY_FORMAT !== 'hmac' && !s.IDENTITY_JWT_KEYS) {
    throw new ConfigError(
      `setting IDENTITY_JWT_KEYS: required when IDENTITY_FORMAT is ${s.IDENTITY_FORMAT} for \`npm run gateway\``,
    );
  }
  // All-in-one forwards to the reference backend unless UPSTREAM_URL is given, and that backend verifies the HMAC headers.
  if (mode === 'start' && s.IDENTITY_FORMAT === 'jwt' && !env.UPSTREAM_URL) {
    throw new ConfigError(
      'setting IDENTITY_FORMAT: jwt alone leaves the reference backend nothing it verifies; use both, or set UPSTREAM_URL',
    );
  }
  return s;
}

/** All-in-one mode invents the secrets it was not given (random per start). */
export function withGeneratedSecrets(s: Settings): Settings & { GATEWAY_SECRET: string; INTERNAL_TOKEN: string } {
  return {
    ...s,
    GATEWAY_SECRET: s.GATEWAY_SECRET ?? randomBytes(32).toString('hex'),
    INTERNAL_TOKEN: s.INTERNAL_TOKEN ?? randomBytes(24).toString('hex'),
  };
}
