// The real all-in-one program forwarding `/v2/workspaces/100/tags` to a trivial upstream, and a keep-alive
// load of it: for the checks of what V8 does under a steady load (test/gateway/young-garbage.test.ts,
// test/ops/pretenuring.test.ts), of what V8 does with a workload preloaded into it (test/ops/scavenge.test.ts,
// test/ops/old-generation.test.ts) and of its log output (test/ops/log-backpressure.test.ts). The demo
// workspace key, limits far above the load (bench/plans.json), the client address from X-Forwarded-For,
// no access log unless a test's settings turn it on.
import http from 'node:http';
import { afterAll, beforeAll, expect } from 'vitest';
import { freePort } from './redis-server.js';
import { startProgram, type Program } from './program.js';
import { listenLocal } from './listen.js';

const KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';

/** An upstream answering every request 200 with a small JSON body; its URL. */
export async function tagsUpstream(): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":[{"id":1,"name":"tag"}]}');
  });
  const { url } = await listenLocal(server);
  return { server, url };
}

/** `node [nodeArgs] <the program> start` on in-memory stores, forwarding to `upstreamUrl`; `env` on top. */
export async function startForwarding(
  upstreamUrl: string,
  nodeArgs: string[],
  env: Record<string, string> = {},
): Promise<Program & { port: number }> {
  const port = await freePort();
  const program = await startProgram(
    {
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      PLANS_FILE: 'bench/plans.json',
      TRUST_PROXY: '127.0.0.1',
      UPSTREAM_URL: upstreamUrl,
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
      ...env,
    },
    nodeArgs,
  );
  return { ...program, port };
}

/**
 * For a test file: the trivial upstream for its whole run, and a `start` that runs the forwarding program
 * with the given node flags (and settings) in front of it. Every program started and the upstream go when
 * the file ends.
 */
export function forwardingPrograms(): (
  nodeArgs: string[],
  env?: Record<string, string>,
) => Promise<Program & { port: number }> {
  const started: Program[] = [];
  let upstream: http.Server | undefined;
  let upstreamUrl = '';
  beforeAll(async () => {
    ({ server: upstream, url: upstreamUrl } = await tagsUpstream());
  });
  afterAll(async () => {
    for (const { child } of started) if (child.exitCode === null) child.kill('SIGKILL');
    upstream?.closeAllConnections();
    upstream?.close();
  });
  return async (nodeArgs, env) => {
    const program = await startForwarding(upstreamUrl, nodeArgs, env);
    started.push(program);
    return program;
  };
}

/**
 * Runs the workload preloaded into `program` (a fixture given with `--import` that, on SIGUSR2, writes
 * `<name>: from <ms> ms` with performance.now(), the clock of V8's trace lines, then `<name>: done`),
 * then stops the program: V8 writes its traces through C's buffered stdout, which the exit flushes.
 * Returns the program's output and when the workload began.
 */
export async function runWorkload(program: Program, name: string): Promise<{ output: string; fromMs: number }> {
  program.child.kill('SIGUSR2');
  const deadline = Date.now() + 60_000;
  while (!program.output().includes(`${name}: done`) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  const exited = new Promise((r) => program.child.once('exit', r));
  program.child.kill('SIGTERM');
  await exited;
  const from = new RegExp(`${name}: from (\\d+) ms`).exec(program.output());
  expect(from, 'the workload ran').not.toBeNull();
  return { output: program.output(), fromMs: Number(from![1]) };
}

/**
 * `n` GETs over `connections` keep-alive connections, the client address `<subnet>.<k>.1` with k cycling
 * over 200 from `offset` (each well under the address layer's 100 a minute), or `address(i)`; their statuses.
 */
export async function loadTags(
  port: number,
  n: number,
  {
    connections,
    subnet,
    offset = 0,
    address = (i) => `${subnet}.${(offset + i) % 200}.1`,
  }: { connections: number; subnet: string; offset?: number; address?: (i: number) => string },
): Promise<number[]> {
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
          headers: { authorization: `Bearer ${KEY}`, 'x-forwarded-for': address(i) },
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
