// Requests through the gateway program for the services tests: each with an X-Request-Id of its own
// (the upstream fleet logs it, so a test can say which target received which request), a client
// address of its own (the per-address limit never refuses) and a key of every scope on workspace 100.
import http from 'node:http';
import { K } from '../fixtures/seed.js';

export interface Answer {
  id: string;
  method: string;
  path: string;
  /** 0: the connection broke without an answer. */
  status: number;
  body: any;
  /** The upstream that answered (its JSON names it), if one did. */
  upstream?: string;
  /** When the request was sent and answered (Date.now()). */
  sent: number;
  answered: number;
}

export interface Step {
  method: 'GET' | 'POST';
  path: string;
}

let ipSeq = 0;

export function gatewayClient(port: number, idPrefix: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let seq = 0;

  function request(step: Step): Promise<Answer> {
    const id = `${idPrefix}-${++seq}`;
    const i = ipSeq++ & 0xffff;
    const payload = step.method === 'POST' ? JSON.stringify({ name: id }) : undefined;
    const sent = Date.now();
    return new Promise((resolve) => {
      const done = (status: number, text: string) => {
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: kept as null, the test's assertion names the status
        }
        const upstream = (body as { data?: { upstream?: string } } | null)?.data?.upstream;
        resolve({ id, ...step, status, body, upstream, sent, answered: Date.now() });
      };
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: step.method,
          path: step.path,
          agent,
          headers: {
            authorization: `Bearer ${K.wsAdmin}`,
            'x-forwarded-for': `10.37.${i >> 8}.${i & 255}`,
            'x-request-id': id,
            ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => done(res.statusCode ?? 0, text));
          res.on('error', () => done(0, text));
        },
      );
      req.on('error', () => done(0, ''));
      req.end(payload);
    });
  }

  /**
   * `count` requests, `concurrency` at a time, the i-th as `stepOf(i)` says; `when[k]` runs once `k`
   * answers are in (the load goes on meanwhile). Resolves with every answer once all are in.
   */
  async function load(
    count: number,
    concurrency: number,
    stepOf: (i: number) => Step,
    when: Record<number, () => Promise<void>> = {},
  ): Promise<Answer[]> {
    const answers: Answer[] = [];
    const hooks: Promise<void>[] = [];
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const a = await request(stepOf(next++));
        answers.push(a);
        const hook = when[answers.length];
        if (hook) hooks.push(hook());
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await Promise.all(hooks);
    return answers;
  }

  /**
   * Batches of `batch` requests (`concurrency` at a time) until `done(lastBatch)` says so; fails after `limit`
   * batches with what it saw. The limit is a fail-safe for a test that would otherwise wait forever,
   * not a bound the test asserts.
   */
  async function until(
    done: (batch: Answer[]) => boolean,
    stepOf: (i: number) => Step,
    opts: { batch?: number; concurrency?: number; limit?: number; pauseMs?: number } = {},
  ): Promise<Answer[]> {
    const { batch = 10, concurrency = 2, limit = 200, pauseMs = 100 } = opts;
    const answers: Answer[] = [];
    for (let b = 0; b < limit; b++) {
      const got = await load(batch, concurrency, stepOf);
      answers.push(...got);
      if (done(got)) return answers;
      // The condition waits on the gateway's timers (an ejection's end, a probe, a DNS refresh).
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    throw new Error(
      `not reached after ${limit} batches; statuses ${JSON.stringify(statuses(answers))}, upstreams ${JSON.stringify(tally(answers))}`,
    );
  }

  return { request, load, until, close: () => agent.destroy() };
}

/** How many answers had each status. */
export function statuses(answers: Answer[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

/** How many answers each upstream gave. */
export function tally(answers: Answer[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of answers) if (a.upstream) out[a.upstream] = (out[a.upstream] ?? 0) + 1;
  return out;
}
