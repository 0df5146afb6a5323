// The default active probe against a real server: what it sends (path under the target's base path,
// the configured Host), and which answers pass.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpProbe } from '../../../src/gateway/upstreams/probe.js';
import { createTargetSet } from '../../../src/gateway/upstreams/targets.js';
import type { Target } from '../../../src/gateway/upstreams/types.js';
import { listenLocal } from '../../helpers/listen.js';
import { EventLog, service } from './target-kit.js';

const seen: { path: string; host: string }[] = [];
const server = http.createServer((req, res) => {
  seen.push({ path: req.url!, host: req.headers.host! });
  if (req.url!.endsWith('/hang')) return;
  const status = req.url!.startsWith('/bad/') ? 500 : Number(/status=(\d+)/.exec(req.url!)?.[1] ?? 200);
  res.writeHead(status, { 'content-type': 'text/plain' }).end('x'.repeat(100_000));
});
let port = 0;

beforeAll(async () => void ({ port } = await listenLocal(server)));
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

function at(origin: string, authority = 'svc.internal:9000', basePath = '/base'): Target {
  return { key: 'k', origin, authority, basePath, weight: 1, outstanding: 0 };
}

describe('httpProbe', () => {
  const probe = httpProbe();

  it('GETs the path under the base path, with the Host the service expects', async () => {
    seen.length = 0;
    expect(await probe(at(`http://127.0.0.1:${port}`), '/healthz?deep=1', 1000)).toBe(true);
    expect(seen).toEqual([{ path: '/base/healthz?deep=1', host: 'svc.internal:9000' }]);
  });

  it('passes on 2xx only', async () => {
    const t = at(`http://127.0.0.1:${port}`);
    const results = [];
    for (const status of [200, 204, 299, 301, 404, 500, 503]) results.push(await probe(t, `/h?status=${status}`, 1000));
    expect(results).toEqual([true, true, true, false, false, false, false]);
  });

  it('fails when refused', async () => {
    const closed = net.createServer();
    const { port: free } = await listenLocal(closed);
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await probe(at(`http://127.0.0.1:${free}`), '/h', 1000)).toBe(false);
  });

  it('fails when no answer comes within the timeout', async () => {
    expect(await probe(at(`http://127.0.0.1:${port}`), '/hang', 50)).toBe(false);
  });

  it('fails at once when abandoned', async () => {
    const abort = new AbortController();
    const pending = httpProbe(abort.signal)(at(`http://127.0.0.1:${port}`), '/hang', 60_000);
    abort.abort();
    expect(await pending).toBe(false);
    expect(await httpProbe(abort.signal)(at(`http://127.0.0.1:${port}`), '/h', 1000)).toBe(false);
  });
});

describe('a target set with the default probe', () => {
  it('puts out a target that answers 5xx, keeps the one that answers 2xx', async () => {
    const events = new EventLog();
    const put = new Promise<void>((r) => (events.ejected = () => r()));
    const set = createTargetSet(
      service({
        targets: [`http://127.0.0.1:${port}/ok`, `http://127.0.0.1:${port}/bad`],
        probe: { path: '/h', intervalMs: 100, unhealthyThreshold: 1 },
      }),
      { clock: { now: () => Date.now() }, events },
    );
    set.start();
    await put;
    set.close();
    expect(set.health().map((h) => [h.key, h.healthy])).toEqual([
      [`127.0.0.1:${port}`, true],
      [`127.0.0.1:${port}#2`, false],
    ]);
  });
});
