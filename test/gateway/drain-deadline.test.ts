// The drain's deadline (docs/decisions.md section 8, DRAIN_TIMEOUT_MS): a request still waiting for its upstream
// is answered 504, not reset, and an upstream answer that arrives after that is dropped without harm.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';
import { TESTED_CLIENT } from './upstreams/forwarder-kit.js';

let slow: http.Server;
let s: Stack;
beforeAll(async () => {
  // Answers 600 ms after a request arrives: after the 200 ms drain deadline below.
  slow = http.createServer((req, res) => {
    req.resume();
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":{"late":true}}');
    }, 600);
  });
  s = await startStack({ mode: 'gateway', upstreamUrl: (await listenLocal(slow)).url, env: TESTED_CLIENT });
});
afterAll(async () => {
  await s?.close();
  slow.closeAllConnections();
  slow.close();
});

describe('the drain deadline', () => {
  it('answers 504 to a request still waiting on its upstream, with Connection: close, and drops the late answer', async () => {
    const pending = s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.70.0.1' });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    const closed = s.app.close(200);
    const r = await pending;
    expect(r.status).toBe(504);
    expect(r.body.error.code).toBe('gateway_timeout');
    expect(r.headers.get('connection')).toBe('close');
    expect(performance.now() - t0).toBeLessThan(1000);
    await closed;
    // The upstream answers later; the process must not fall over writing to an answered response.
    await new Promise((r) => setTimeout(r, 700));
  });
});
