import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import { LogSink, PIPE_BUF_BYTES } from './log-sink.js';

/**
 * Field names whose values are secret wherever they appear: request and response headers
 * (`Authorization`, `X-Api-Key`, cookies, the gateway's signature) and the names the code gives to
 * keys, session tokens and the two shared secrets (docs/decisions.md section 8: no secret in a log line).
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
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  output: { shared?: boolean } = {},
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { svc: 'keygate' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (destination) return pino(options, destination);
  const pretty = logFormatFor(process.stdout) === 'pretty' ? prettyStream() : null;
  if (pretty) return pino(options, pretty);
  // JSON lines are written in chunks off the event loop (./log-sink.ts): a synchronous write per
  // line cost the gateway about 40 µs per request with the access log on (bench/RESULTS.md). What is
  // pending is written when the process exits. `shared`: other processes write to the same stdout.
  const sink = new LogSink(1, {
    chunkBytes: output.shared ? PIPE_BUF_BYTES : undefined,
    dropNotice: (dropped) =>
      `{"level":40,"time":${Date.now()},"svc":"keygate","dropped":${dropped},"msg":"log lines dropped: the log output did not keep up"}\n`,
  });
  return pino(options, sink);
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

/**
 * The access log line writer: one line at info per answered request (ACCESS_LOG=on; the caller checks the
 * setting), byte for byte the line `log.info(accessLogFields(source), 'request')` would write, into the
 * logger's own stream (so lines stay in order with the rest and reach a test's destination alike).
 *
 * Built by hand rather than through pino: every field is allow-listed and of a known shape (a validated
 * request id, a route template, numbers), so pino's generic path (redaction over some 300 secret paths,
 * serializers) buys nothing here. The process's own output (a LogSink, ./log-sink.ts) takes each line
 * and gathers the lines into chunks itself. Any other stream (a test's, a file the bench opens) gets
 * them in batches, one write per ACCESS_FLUSH_MS or ACCESS_FLUSH_BYTES, whichever comes first: a write
 * per line or per event-loop turn cost more than building the line (bench/diagnostics/access-line.ts).
 * Lines pending at exit are written by the process's 'exit' handlers; only a kill -9 loses them (at most
 * the last 25 ms).
 */
export function accessLogWriter(log: Logger): (source: AccessLogSource) => void {
  const internals = log as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as AccessBatch['stream'];
  // A LogSink gathers lines into chunks itself: each line goes straight into it.
  const sink = stream instanceof LogSink ? stream : null;
  const batch: AccessBatch = { stream, pending: '' };
  // The logger's bindings, already serialized by pino: `,"svc":"keygate"` and any child's.
  const bindings = internals[pino.symbols.chindingsSym] as string;
  // Nearly every line has the route and method of the line before it: their JSON is kept.
  let route = '';
  let routeJson = '""';
  let method = '';
  let methodJson = '""';
  return (source) => {
    if (log.levelVal > INFO) return;
    if (source.route !== route) {
      route = source.route;
      const q = route.indexOf('?');
      routeJson = jsonString(q === -1 ? route : route.slice(0, q));
    }
    if (source.method !== method) {
      method = source.method;
      methodJson = jsonString(method);
    }
    const code = source.code ?? null;
    const line =
      `{"level":30,"time":${Date.now()}${bindings},"requestId":${jsonString(source.requestId)}` +
      `,"method":${methodJson},"route":${routeJson},"status":${source.status}` +
      `,"code":${code === null ? 'null' : jsonString(code)},"ms":${tenths(source.ms)}` +
      `,"organizationId":${source.organizationId ?? null},"keyId":${source.keyId ?? null}` +
      // A trace id is 32 hex digits (OpenTelemetry's own), so it needs no escaping.
      (source.traceId === undefined ? '' : `,"traceId":"${source.traceId}"`) +
      `,"msg":"request"}\n`;
    if (sink) return void sink.write(line);
    if (batch.pending === '') {
      unflushed.add(batch);
      setTimeout(flushBatch, ACCESS_FLUSH_MS, batch).unref();
    }
    batch.pending += line;
    if (batch.pending.length >= ACCESS_FLUSH_BYTES) flushBatch(batch);
  };
}

const INFO = 30;
const ACCESS_FLUSH_MS = 25;
const ACCESS_FLUSH_BYTES = 16_384;
/** Characters a JSON string must escape (and the two line separators some readers split on). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u2028\u2029\ud800-\udfff]/;

/**
 * `Math.round(ms * 10) / 10` as JavaScript writes it, from integers: a fraction's shortest spelling
 * (V8's double to string) cost several times the rest of the field. A number of tenths k/10 is
 * spelled with its one decimal, or none when k/10 is whole.
 */
function tenths(ms: number): string {
  const t = Math.round(ms * 10);
  const r = t % 10;
  return r > 0 && t < 1e15 ? `${(t - r) / 10}.${r}` : `${t / 10}`;
}

function jsonString(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

interface AccessBatch {
  stream: { write(chunk: string): unknown; flushSync?: () => void };
  pending: string;
}

/** Batches holding lines not yet handed to their stream; flushed at exit too, so no answered request goes unlogged. */
const unflushed = new Set<AccessBatch>();

/** Hands every pending access line to its stream now (at exit, and for tests that read the lines). */
export function flushAccessLines(): void {
  for (const batch of unflushed) flushBatch(batch);
}

function flushBatch(batch: AccessBatch): void {
  unflushed.delete(batch);
  const lines = batch.pending;
  batch.pending = '';
  if (lines !== '') batch.stream.write(lines);
}

process.on('exit', () => {
  for (const batch of unflushed) {
    try {
      flushBatch(batch);
      batch.stream.flushSync?.();
    } catch {
      // The stream is already closed: nothing more can be written at exit.
    }
  }
});

/** One access log line at info, through pino (for a caller without a writer at hand). */
export function logAccess(log: Logger, source: AccessLogSource): void {
  log.info(accessLogFields(source), 'request');
}
