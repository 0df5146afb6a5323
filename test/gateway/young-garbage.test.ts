// What a forwarded request leaves behind once answered must die in V8's young generation. A gateway whose
// finished requests are promoted to the old generation pays for it on every young collection (each
// copies the survivors) and with a full collection every second or two under load: the CPU per request
// and the p99 of the hop (bench/RESULTS.md, "finished requests no longer outlive the young generation"). The real program runs
// with `--trace-gc-nvp`, which prints what each young collection promoted; under a steady load the
// bytes promoted per request stay near nothing (the bare proxy's), not the few kilobytes of a whole
// request's objects.
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { startProgram } from '../helpers/program.js';
import { listenLocal } from '../helpers/listen.js';

const KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';
let child: ChildProcess;
let output: () => string;
let port: number;
let upstream: http.Server;

beforeAll(async () => {
  upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":[{"id":1,"name":"tag"}]}');
  });
  const { url: upstreamUrl } = await listenLocal(upstream);
  port = await freePort();
  const admin = await freePort();
  ({ child, output } = await startProgram(
    {
      PORT: String(port),
      ADMIN_PORT: String(admin),
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
    ['--trace-gc-nvp'],
  ));
}, 90_000);
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  upstream?.closeAllConnections();
  upstream?.close();
});

/** `n` GETs over `connections` keep-alive connections, the client address cycling over 200 (each well under the address layer's 100 a minute). */
async function load(n: number, connections: number, offset: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
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
          headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': `10.1.${(offset + i) % 200}.1` },
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
    Array.from({ length: connections }, async () => {
      while (next < n) await one(next++);
    }),
  );
  agent.destroy();
  return statuses;
}

/** The bytes promoted by each young collection (`gc=s`) printed so far, from line `from` on. */
function promoted(from: number): { collections: number; bytes: number; lines: number } {
  const lines = output()
    .split('\n')
    .filter((l) => l.includes(' gc=s '));
  const bytes = lines.slice(from).reduce((sum, l) => sum + Number(/ promoted=(\d+)/.exec(l)?.[1] ?? 0), 0);
  return { collections: lines.length - from, bytes, lines: lines.length };
}

describe('young garbage', () => {
  it('a forwarded request leaves next to nothing for the old generation', async () => {
    // Warm-up: compilation, the caches, the pools.
    expect(new Set(await load(1500, 8, 0))).toEqual(new Set([200]));
    const before = promoted(0).lines;
    const n = 6000;
    expect(new Set(await load(n, 8, 1500))).toEqual(new Set([200]));
    const { collections, bytes } = promoted(before);
    expect(collections).toBeGreaterThanOrEqual(3);
    // About 5 KB a request when every finished request outlived a young collection; a young
    // collection that finds only the requests in flight promotes a few hundred bytes per request at most.
    expect(bytes / n, `${bytes} bytes promoted by ${collections} young collections`).toBeLessThan(800);
  }, 120_000);
});
