// Issue 20, defect 7: SIGTERM under keep-alive load resets no request. 40 kept-alive connections send
// back to back; the drain must answer what arrives (with `Connection: close`) rather than close an idle
// connection while the client's next request is on its way, and must not close a new connection
// before its first request. Five short runs each with one process and with WORKERS=2, against the
// real gateway program. A refused connection (the listener is gone) is not a reset: the client knows
// nothing was sent.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProgram } from '../helpers/gateway-program.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';

const RUNS = 5;
const CONNECTIONS = 40;

let upstream: http.Server;
let upstreamUrl: string;

beforeAll(async () => {
  // Quick answers, so that connections are idle between requests for short moments all the time.
  upstream = http.createServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { path: req.url } }));
    }, Math.random() * 5);
  });
  ({ url: upstreamUrl } = await listenLocal(upstream));
});

afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

interface Run {
  exitCode: number | null;
  answered: number;
  /** Answers that arrived after the test sent the signal: the signal came under load. */
  answeredAfterSignal: number;
  /** Client-side errors other than a refused connection, by code. */
  resets: string[];
}

/** One run: a fresh program, 40 connections of back-to-back requests, SIGTERM after 300 answers. */
async function run(workers: number): Promise<Run> {
  const gateway = await startGatewayProgram(
    { UPSTREAM_URL: upstreamUrl, WORKERS: String(workers), DRAIN_TIMEOUT_MS: '5000' },
    { redis: workers > 1 },
  );
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const result: Run = { exitCode: null, answered: 0, answeredAfterSignal: 0, resets: [] };
    let signalled = false;
    let stop = false;
    const one = (n: number) =>
      new Promise<void>((resolve) => {
        const req = http.get(
          {
            host: '127.0.0.1',
            port: gateway.port,
            agent,
            path: `/v2/workspaces/100/tags?n=${n}`,
            headers: { authorization: `Bearer ${K.wsAdmin}`, 'x-forwarded-for': `10.3.${(n >> 8) & 255}.${n & 255}` },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              result.answered++;
              if (signalled) result.answeredAfterSignal++;
              resolve();
            });
            res.on('error', (err) => {
              result.resets.push((err as NodeJS.ErrnoException).code ?? err.message);
              stop = true;
              resolve();
            });
          },
        );
        req.on('error', (err) => {
          const code = (err as NodeJS.ErrnoException).code ?? err.message;
          if (code !== 'ECONNREFUSED') result.resets.push(`${code}${signalled ? '' : ' (before the signal)'}`);
          stop = true;
          resolve();
        });
      });
    let next = 0;
    const lanes = Array.from({ length: CONNECTIONS }, async () => {
      while (!stop) await one(next++);
    });
    while (result.answered < 300 && !stop) await new Promise((r) => setTimeout(r, 10));
    const exited = new Promise<number | null>((r) => gateway.child.once('exit', (code) => r(code)));
    signalled = true;
    gateway.child.kill('SIGTERM');
    result.exitCode = await exited;
    stop = true;
    await Promise.all(lanes);
    agent.destroy();
    return result;
  } finally {
    await gateway.close();
  }
}

describe.runIf(Boolean(process.env.DATABASE_URL && process.env.REDIS_URL))(
  'SIGTERM under keep-alive load resets nothing',
  () => {
    it.concurrent.each([1, 2])(
      'WORKERS=%i: no client-side reset in five runs',
      async (workers) => {
        const runs: Run[] = [];
        for (let i = 0; i < RUNS; i++) runs.push(await run(workers));
        const summary = runs.map((r) => ({ exitCode: r.exitCode, resets: r.resets }));
        expect(summary).toEqual(runs.map(() => ({ exitCode: 0, resets: [] })));
        // The signal came under load: some requests were answered after it.
        for (const r of runs) expect(r.answeredAfterSignal).toBeGreaterThan(0);
      },
      600_000,
    );
  },
);
