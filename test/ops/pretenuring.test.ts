// V8 must not decide to allocate any literal of the program directly in the old generation. At start-up
// nearly everything made lives on, so V8 "tenures" the literal sites that made it; a site also run once
// per request then makes each request's object old, and that old object keeps the request's young
// objects alive through every young collection until the next full one: 2 to 3 MB copied and promoted
// a young collection instead of 0.1 to 0.3, a full collection every 1 to 2 s (bench/RESULTS.md, "the
// high-promotion state"). Which sites start-up tenures depends on when its collections fall, so the
// state came to about one process in ten; the decisions themselves come at every start, and V8 prints
// each with `--trace-pretenuring-statistics`. Naming the flag on node's command line keeps V8's default
// (src/ops/v8-flags.ts): the second program shows the test sees the decisions when they are made (with
// pretenuring off V8 counts nothing, so the first may print no statistics line at all).
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { startProgram, type Program } from '../helpers/program.js';
import { listenLocal } from '../helpers/listen.js';

const KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';
const started: ChildProcess[] = [];
let upstream: http.Server;
let upstreamUrl: string;

beforeAll(async () => {
  upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":[{"id":1,"name":"tag"}]}');
  });
  ({ url: upstreamUrl } = await listenLocal(upstream));
});
afterAll(async () => {
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  upstream?.closeAllConnections();
  upstream?.close();
});

async function start(nodeArgs: string[] = []): Promise<Program & { port: number }> {
  const port = await freePort();
  const program = await startProgram(
    {
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      // Limits far above this test's load (bench/plans.json), and the client address from X-Forwarded-For.
      PLANS_FILE: 'bench/plans.json',
      TRUST_PROXY: '127.0.0.1',
      UPSTREAM_URL: upstreamUrl,
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
    },
    ['--trace-pretenuring-statistics', ...nodeArgs],
  );
  started.push(program.child);
  return { ...program, port };
}

/** `n` GETs over 8 keep-alive connections; their statuses. */
async function load(port: number, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const statuses: number[] = [];
  let next = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = http.get(
        {
          host: '127.0.0.1',
          port,
          path: '/v2/workspaces/100/tags',
          agent,
          headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': `10.2.${i % 200}.1` },
        },
        (res) => {
          statuses.push(res.statusCode ?? 0);
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
    });
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < n) await one(next++);
    }),
  );
  agent.destroy();
  return statuses;
}

/** The allocation sites V8 decided to tenure, from its `pretenuring:` lines (`... maybe tenure => tenure`). */
function tenured(output: string): string[] {
  return output.split('\n').filter((line) => {
    const decision = /pretenuring: AllocationSite.*\) ([a-z' ]+) => ([a-z' ]+)$/.exec(line.trimEnd());
    return decision !== null && decision[2] === 'tenure' && decision[1] !== 'tenure';
  });
}

describe('allocation-site pretenuring', () => {
  it('no literal of the program is tenured, at start-up or under load', async () => {
    const program = await start();
    expect(new Set(await load(program.port, 2000))).toEqual(new Set([200]));
    expect(tenured(program.output())).toEqual([]);
  }, 120_000);

  it('with the flag named on the command line, V8 decides as by default (and this test sees it)', async () => {
    const program = await start(['--allocation-site-pretenuring']);
    expect(new Set(await load(program.port, 2000))).toEqual(new Set([200]));
    expect(tenured(program.output()).length).toBeGreaterThan(0);
  }, 120_000);
});
