// The replay of corpus.ts shared by every run of it (answers.test.ts through keygate's own proxy,
// test/deploy/nginx-recorded-answers.test.ts through nginx and the decision service): the stack's
// setup, how a call is sent, how its answer is normalized and how the entries are built, so that both
// runs compare with answers.json on exactly the same terms.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { FakeClock, type StackOptions } from '../../helpers/stack.js';
import { BODY_LIMIT, CORPUS, CORS_ORIGIN, EXTRA_SEED, type Call } from './corpus.js';

export const FIXTURE = new URL('./answers.json', import.meta.url);
/** Bodies longer than this (the OpenAPI documents) are recorded by digest and size. */
const INLINE_BODY_MAX = 8192;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface Entry {
  name: string;
  request: string;
  /** The answers before the last of a repeated call, as runs of "status code". */
  before?: string[];
  answer: Answer;
}

export interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** The recorded run's clock, at its starting instant. */
export const answersClock = () => new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));

/** The recorded stack's options (`env` adds to its settings). */
export function answersStackOptions(clock: FakeClock, env: Record<string, string> = {}): StackOptions {
  return {
    clock,
    extra: EXTRA_SEED,
    env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), CORS_ORIGINS: CORS_ORIGIN, ...env },
  };
}

export const readFixture = () => JSON.parse(readFileSync(FIXTURE, 'utf8')) as Entry[];

export function send(baseUrl: string, c: Call): Promise<Raw> {
  const headers: Record<string, string> = { 'x-forwarded-for': c.ip, ...c.headers };
  if (c.key) headers.authorization = `Bearer ${c.key}`;
  if (c.apiKey) headers['x-api-key'] = c.apiKey;
  const body =
    c.body === undefined ? undefined : Buffer.from(typeof c.body === 'string' ? c.body : JSON.stringify(c.body));
  if (body) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(body.length);
  }
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    // node:http sends the path exactly as written (fetch would resolve `%2e%2e` and `//`), and
    // `agent: false` gives every call its own connection: no answer depends on an earlier one's socket.
    const req = http.request(
      { host: url.hostname, port: url.port, method: c.method, path: c.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function placeholders(text: string, volatile: string[], requestId: string | undefined): string {
  let t = text;
  for (const host of volatile) t = t.split(host).join('<host>');
  if (requestId) t = t.split(requestId).join('<request-id>');
  return t;
}

function normalizeJson(v: unknown): unknown {
  if (typeof v === 'string') return ISO_TIME.test(v) ? '<timestamp>' : v;
  if (Array.isArray(v)) return v.map(normalizeJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalizeJson(x)]));
  return v;
}

/** `volatile`: the run's own hosts (host:port), named `<host>` wherever an answer names them. */
export function normalize(c: Call, r: Raw, volatile: string[]): Answer {
  const sentId = c.headers?.['x-request-id'];
  const rawId = r.headers['x-request-id'];
  // A request id the client chose is part of the answer; one the gateway drew is not.
  const drawnId = typeof rawId === 'string' && rawId !== sentId ? rawId : undefined;
  const headers: Record<string, string> = {};
  for (const name of Object.keys(r.headers).sort()) {
    const raw = r.headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : String(raw);
    headers[name] = name === 'date' ? '<date>' : placeholders(value, volatile, drawnId);
  }
  let body: unknown = null;
  if (r.text.length > INLINE_BODY_MAX) {
    body = { sha256: createHash('sha256').update(r.text).digest('hex'), bytes: Buffer.byteLength(r.text) };
  } else if (r.text) {
    const text = placeholders(r.text, volatile, drawnId);
    try {
      body = normalizeJson(JSON.parse(text));
    } catch {
      body = text;
    }
  }
  return { status: r.status, headers, body };
}

export const describeCall = (c: Call) =>
  `${c.method} ${c.path.length > 120 ? `${c.path.slice(0, 100)}... (${c.path.length} bytes)` : c.path}`;

/** "200 ×19" style runs of the answers a repeated call got before its last. */
function runs(answers: Answer[]): string[] {
  const out: { label: string; n: number }[] = [];
  for (const a of answers) {
    const b = a.body as { errorCode?: string; error_code?: string; error?: { code?: string } } | null;
    const code = b?.errorCode ?? b?.error_code ?? b?.error?.code;
    const label = code ? `${a.status} ${code}` : String(a.status);
    const last = out[out.length - 1];
    if (last?.label === label) last.n++;
    else out.push({ label, n: 1 });
  }
  return out.map((x) => `${x.label} ×${x.n}`);
}

/** The corpus in order against `baseUrl`, the clock moved as its steps say. */
export async function replay(baseUrl: string, clock: FakeClock, volatile: string[]): Promise<Entry[]> {
  const entries: Entry[] = [];
  for (const step of CORPUS) {
    if ('clock' in step) {
      if (step.clock === 'next-minute') clock.t = clock.t - (clock.t % 60_000) + 65_000;
      else clock.advance(step.clock);
      continue;
    }
    const answers: Answer[] = [];
    for (let i = 0; i < (step.repeat ?? 1); i++) answers.push(normalize(step, await send(baseUrl, step), volatile));
    const entry: Entry = { name: step.name, request: describeCall(step), answer: answers[answers.length - 1]! };
    if (answers.length > 1) entry.before = runs(answers.slice(0, -1));
    entries.push(entry);
  }
  return entries;
}
