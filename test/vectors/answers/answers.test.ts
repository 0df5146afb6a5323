// The workspace API's recorded answers (issue 38's must-show): the corpus of corpus.ts replayed in order
// through the real gateway in front of the reference backend, each answer's status, headers and body
// compared with answers.json. What varies run to run for no client-visible reason (request ids, dates,
// timestamps the database stamps, the ports) is replaced by a placeholder that keeps its presence;
// everything else must stay as it is, whatever moves inside the gateway.
// `RECORD_ANSWERS=1 npx vitest run --project main test/vectors/answers` rewrites the fixture.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../../helpers/stack.js';
import { BODY_LIMIT, CORPUS, CORS_ORIGIN, EXTRA_SEED, type Call } from './corpus.js';

const FIXTURE = new URL('./answers.json', import.meta.url);
const RECORD = process.env.RECORD_ANSWERS === '1';
/** Bodies longer than this (the OpenAPI documents) are recorded by digest and size. */
const INLINE_BODY_MAX = 8192;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

interface Entry {
  name: string;
  request: string;
  /** The answers before the last of a repeated call, as runs of "status code". */
  before?: string[];
  answer: Answer;
}

let s: Stack;
let clock: FakeClock;
let volatile: string[] = [];

beforeAll(async () => {
  clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
  s = await startStack({
    clock,
    extra: EXTRA_SEED,
    env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), CORS_ORIGINS: CORS_ORIGIN },
  });
  // The ports are the run's own: an answer naming one names it as a placeholder.
  volatile = [new URL(s.gatewayUrl).host, new URL(s.backendUrl).host].filter(Boolean);
});
afterAll(async () => s?.close());

function send(c: Call): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const headers: Record<string, string> = { 'x-forwarded-for': c.ip, ...c.headers };
  if (c.key) headers.authorization = `Bearer ${c.key}`;
  if (c.apiKey) headers['x-api-key'] = c.apiKey;
  const body =
    c.body === undefined ? undefined : Buffer.from(typeof c.body === 'string' ? c.body : JSON.stringify(c.body));
  if (body) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(body.length);
  }
  const url = new URL(s.gatewayUrl);
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

function placeholders(text: string, requestId: string | undefined): string {
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

function normalize(c: Call, r: Awaited<ReturnType<typeof send>>): Answer {
  const sentId = c.headers?.['x-request-id'];
  const rawId = r.headers['x-request-id'];
  // A request id the client chose is part of the answer; one the gateway drew is not.
  const drawnId = typeof rawId === 'string' && rawId !== sentId ? rawId : undefined;
  const headers: Record<string, string> = {};
  for (const name of Object.keys(r.headers).sort()) {
    const raw = r.headers[name];
    const value = Array.isArray(raw) ? raw.join(', ') : String(raw);
    headers[name] = name === 'date' ? '<date>' : placeholders(value, drawnId);
  }
  let body: unknown = null;
  if (r.text.length > INLINE_BODY_MAX) {
    body = { sha256: createHash('sha256').update(r.text).digest('hex'), bytes: Buffer.byteLength(r.text) };
  } else if (r.text) {
    const text = placeholders(r.text, drawnId);
    try {
      body = normalizeJson(JSON.parse(text));
    } catch {
      body = text;
    }
  }
  return { status: r.status, headers, body };
}

const describeCall = (c: Call) =>
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

async function replay(): Promise<Entry[]> {
  const entries: Entry[] = [];
  for (const step of CORPUS) {
    if ('clock' in step) {
      if (step.clock === 'next-minute') clock.t = clock.t - (clock.t % 60_000) + 65_000;
      else clock.advance(step.clock);
      continue;
    }
    const answers: Answer[] = [];
    for (let i = 0; i < (step.repeat ?? 1); i++) answers.push(normalize(step, await send(step)));
    const entry: Entry = { name: step.name, request: describeCall(step), answer: answers[answers.length - 1]! };
    if (answers.length > 1) entry.before = runs(answers.slice(0, -1));
    entries.push(entry);
  }
  return entries;
}

describe('the workspace API: recorded answers', () => {
  it('every answer of the corpus equals the recorded one', async () => {
    const entries = await replay();
    if (RECORD) {
      writeFileSync(FIXTURE, JSON.stringify(entries, null, 2) + '\n');
      return;
    }
    const recorded = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Entry[];
    expect(entries.map((e) => e.name)).toEqual(recorded.map((e) => e.name));
    for (let i = 0; i < entries.length; i++) expect(entries[i], entries[i]!.name).toEqual(recorded[i]);
  });
});
