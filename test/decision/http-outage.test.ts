// A store the pipeline cannot do without is down (the limiter's breaker open in closed failure mode):
// the decision service answers as the gateway does, 503 with Retry-After, never a 401 or 403 that would
// blame the key, on /auth (directly and through nginx's token), /envoy and /verify alike. Logs name no secret.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createMemoryStores } from '../../src/limits/memory/index.js';
import { StoreUnavailableError } from '../../src/limits/resilient/index.js';
import type { SharedStores } from '../../src/limits/types.js';

let down = false;
/** Every call into the stores (their nested counters included) fails as a breaker open in closed mode does. */
function switchable<T extends object>(target: T): T {
  return new Proxy(target, {
    get(t, name, receiver) {
      const v = Reflect.get(t, name, receiver) as unknown;
      if (typeof v === 'function')
        return (...args: unknown[]) => {
          if (down) throw new StoreUnavailableError('the test switched the stores off');
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      return v !== null && typeof v === 'object' ? switchable(v) : v;
    },
  });
}

const lines: string[] = [];
const memory = createMemoryStores();
let s: Stack;
beforeAll(async () => {
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  s = await startStack({ stores: switchable(memory) as SharedStores, env: { DECISION_PORT: '0' }, log });
});
afterAll(async () => {
  await s?.close();
  await memory.close();
});

describe('the stores down', () => {
  it('answers 503 as the gateway does, on every endpoint, and says so in the access log without a key', async () => {
    const path = '/v2/workspaces/100/tags';
    const traefik = { 'x-forwarded-method': 'GET', 'x-forwarded-uri': path, authorization: `Bearer ${K.wsAdmin}` };
    // Warm: the principal is cached, as on a busy gateway.
    expect((await fetch(`${s.app.decisionUrl}/auth`, { headers: traefik })).status).toBe(200);
    down = true;
    try {
      const g = await s.request('GET', path, { key: K.wsAdmin });
      expect(g.status).toBe(503);
      const auth = await fetch(`${s.app.decisionUrl}/auth`, { headers: traefik });
      expect(auth.status).toBe(503);
      expect(auth.headers.get('retry-after')).toBe(g.headers.get('retry-after'));
      const body = await auth.json();
      expect(body.error.code).toBe(g.body.error.code);
      const nginx = await fetch(`${s.app.decisionUrl}/auth`, {
        headers: { 'x-keygate-proxy': 'nginx', 'x-original-uri': path, authorization: `Bearer ${K.wsAdmin}` },
      });
      expect(nginx.status).toBe(401);
      const rendered = await fetch(`${s.app.decisionUrl}/answer`, {
        headers: { 'x-keygate-answer': nginx.headers.get('x-keygate-answer')! },
      });
      expect(rendered.status).toBe(503);
      const envoy = await fetch(`${s.app.decisionUrl}/envoy${path}`, {
        headers: { authorization: `Bearer ${K.wsAdmin}` },
      });
      expect(envoy.status).toBe(503);
      const v = await fetch(`${s.app.decisionUrl}/verify`, {
        method: 'POST',
        body: JSON.stringify({ key: K.wsAdmin, path }),
      });
      expect(v.status).toBe(200);
      expect(await v.json()).toMatchObject({ allowed: false, status: 503, code: g.body.error.code });
    } finally {
      down = false;
    }
    // One access line each: the gateway's answer, then /auth, nginx's /auth, /envoy and /verify. The
    // access log writes its lines in batches: the last may come a moment after its answer.
    const count = () => lines.join('').match(/"status":503/g)?.length ?? 0;
    for (const deadline = Date.now() + 2_000; count() < 5 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 20));
    expect(count()).toBe(5);
    const logged = lines.join('');
    expect(logged).not.toContain(K.wsAdmin);
    expect(logged).not.toContain(s.gatewaySecret);
  });
});
