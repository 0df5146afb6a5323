import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

/**
 * Field names whose values are secret wherever they appear: request and response headers
 * (`Authorization`, `X-Api-Key`, cookies, the gateway's signature) and the names the code gives to
 * keys, session tokens and the two shared secrets (CONTRACT section 8: no secret in a log line).
 */
const SECRET_FIELDS = [
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'cookie',
  'set-cookie',
  'x-gateway-signature',
  'password',
  'secret',
  'token',
  'apiKey',
  'accessToken',
  'refreshToken',
  'idToken',
  'sessionToken',
  'clientSecret',
  'gatewaySecret',
  'internalToken',
  'GATEWAY_SECRET',
  'INTERNAL_TOKEN',
];

/** Where a log object may nest headers, bodies or settings (`req.headers.authorization`, `user.token`). */
const SECRET_CONTAINERS = [
  'headers',
  'req.headers',
  'res.headers',
  'request.headers',
  'response.headers',
  'body',
  'req.body',
  'config',
  'settings',
  'err',
  'user',
  'session',
  'credentials',
];

/**
 * pino `redact` paths: each secret field at the top of a log object and inside each container above.
 * Callers allow-list what they log; this is the second line of defence for a whole object logged by
 * mistake. Explicit paths only: with @pinojs/redact each wildcard path (`*.token`) costs about 1 µs
 * on every line, and the access log writes one per request; explicit paths cost nothing measurable.
 */
export const REDACT_PATHS: string[] = SECRET_FIELDS.flatMap((f) => {
  const key = /^[A-Za-z_][A-Za-z0-9_]*$/.test(f) ? `.${f}` : `["${f}"]`;
  return [key.startsWith('.') ? f : key, ...SECRET_CONTAINERS.map((c) => c + key)];
});

export type LogFormat = 'pretty' | 'json';

/** A person at a terminal reads pino-pretty; anything else (a pipe, a file, a log collector) gets JSON lines. */
export function logFormatFor(stdout: { isTTY?: boolean }): LogFormat {
  return stdout.isTTY === true ? 'pretty' : 'json';
}

/**
 * The process logger. With no `destination`, output goes to stdout: pino-pretty when stdout is a
 * terminal and pino-pretty is installed (it is a production dependency; an image built without it
 * still logs, as JSON), JSON lines otherwise. Tests pass a destination to read the lines.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { svc: 'keygate' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (destination) return pino(options, destination);
  const pretty = logFormatFor(process.stdout) === 'pretty' ? prettyStream() : null;
  // JSON lines are written asynchronously (sonic-boom coalesces the lines of one turn into one
  // write): a synchronous write per line cost the gateway about 40 µs per request with the access log
  // on (bench/RESULTS.md). pino flushes what is pending when the process exits.
  return pretty ? pino(options, pretty) : pino(options, pino.destination({ dest: 1, sync: false }));
}

/** pino-pretty writing synchronously to stdout (so the last lines before an exit are not lost), or null when absent. */
function prettyStream(): pino.DestinationStream | null {
  let build: (opts: Record<string, unknown>) => pino.DestinationStream;
  try {
    const mod = createRequire(import.meta.url)('pino-pretty') as { default?: typeof build } & typeof build;
    build = mod.default ?? mod;
  } catch {
    return null;
  }
  return build({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,svc' });
}

/** What a gateway access log line may be handed; extra properties are accepted and dropped. */
export interface AccessLogSource {
  requestId: string;
  method: string;
  /** The route template (`/v2/workspaces/{workspaceId}/accounts`) or `unmatched`; never the raw target. */
  route: string;
  status: number;
  /** The Envelope A / B / v1 error code, null on success. */
  code?: string | null;
  /** Milliseconds from the request to the response. */
  ms: number;
  organizationId?: number | null;
  keyId?: number | null;
  /** The OpenTelemetry trace id, when tracing is on. */
  traceId?: string;
}

/** The access log line's fields, and only these: no header, no key secret, no query string. */
export interface AccessLogFields {
  requestId: string;
  method: string;
  route: string;
  status: number;
  code: string | null;
  ms: number;
  organizationId: number | null;
  keyId: number | null;
  traceId?: string;
}

/** Allow-list the access log fields of `source` (STYLE, traps: log method, route, status; never headers). */
export function accessLogFields(source: AccessLogSource): AccessLogFields {
  const q = source.route.indexOf('?');
  const fields: AccessLogFields = {
    requestId: source.requestId,
    method: source.method,
    route: q === -1 ? source.route : source.route.slice(0, q),
    status: source.status,
    code: source.code ?? null,
    ms: Math.round(source.ms * 10) / 10,
    organizationId: source.organizationId ?? null,
    keyId: source.keyId ?? null,
  };
  if (source.traceId !== undefined) fields.traceId = source.traceId;
  return fields;
}

/** One access log line at info (ACCESS_LOG=on; the caller checks the setting). */
export function logAccess(log: Logger, source: AccessLogSource): void {
  log.info(accessLogFields(source), 'request');
}
