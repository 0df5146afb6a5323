// A service's forwarder (src/gateway/upstreams/forwarder.ts over src/gateway/upstream-client.ts) in
// front of real upstreams on loopback: which failures are tried again on another target and which are
// not, the attempts and the retry budget that bound the tries, the route's timeouts within the global
// bound, answers streamed unchanged, and the pools of targets gone and of a closed forwarder.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceFile } from '../../../src/config/services.js';
import type { Forwarder } from '../../../src/gateway/upstream-client.js';
import { createServiceForwarder } from '../../../src/gateway/upstreams/forwarder.js';
import {
  CHUNKS,
  CLIENTS,
  chunk,
  closedPort,
  echoed,
  Events,
  FakeTargets,
  front,
  service,
  upstream,
  type Mode,
  type Upstream,
} from './forwarder-kit.js';

const state: {
  forwarder: Forwarder | null;
  route?: { retry: boolean; timeouts: Record<string, number> };
  client?: (typeof CLIENTS)[number];
} = {
  forwarder: null,
};
let gateway: Awaited<ReturnType<typeof front>>;
const upstreams: Upstream[] = [];
let refused: string;

beforeAll(async () => {
  gateway = await front(state);
  refused = await closedPort();
});
afterEach(async () => {
  await state.forwarder?.close();
  state.forwarder = null;
  state.route = undefined;
  await Promise.all(upstreams.splice(0).map((u) => u.close()));
});
afterAll(() => gateway.close());

async function serve(...modes: Mode[]): Promise<Upstream[]> {
  const made = await Promise.all(modes.map((m, i) => upstream(`u${i + 1}`, m)));
  upstreams.push(...made);
  return made;
}

/** A forwarder of `urls` (in the fake set's order) with the service's settings `file` on top of its targets. */
function forwarder(urls: string[], file: Omit<ServiceFile, 'targets'> = {}, timeoutMs = 5_000, maxSockets = 8) {
  const targets = new FakeTargets(urls);
  const events = new Events();
  state.forwarder = createServiceForwarder(service({ targets: urls, ...file }), targets, {
    timeoutMs,
    maxSockets,
    events,
    client: state.client,
  });
  return { targets, events };
}

const keyOf = (url: string) => new URL(url).host;

describe.each(CLIENTS)('UPSTREAM_CLIENT=%s', (client) => {
  beforeAll(() => {
    state.client = client;
  });

  describe('the try on a target', () => {
    it("sends the target its base path before the request target, exactly, and the client's Host", async () => {
      const [u] = await serve('ok');
      forwarder([`${u.url}/base/`]);
      const a = await gateway.request('/v2/a%2Fb?x=1&y=%20');
      expect(a.status).toBe(200);
      expect(echoed(a)).toMatchObject({ url: '/base/v2/a%2Fb?x=1&y=%20' });
      expect(echoed(a).host).not.toBe(u.key);
      expect(a.headers['x-request-id']).toBe('r1');
    });

    it("sends the target its own authority as Host when the service does not preserve the client's", async () => {
      const [u] = await serve('ok');
      forwarder([`${u.url}/base/`], { preserveHost: false });
      const a = await gateway.request('/v2/x');
      expect(echoed(a)).toMatchObject({ url: '/base/v2/x', host: u.key });
    });

    it('answers 502 through onFail when the service has no target at all', async () => {
      const [u] = await serve('ok');
      const targets = new FakeTargets([]);
      state.forwarder = createServiceForwarder(service({ targets: [u.url] }), targets, {
        timeoutMs: 1_000,
        maxSockets: 4,
        events: new Events(),
        client: state.client,
      });
      const a = await gateway.request('/');
      expect(a.status).toBe(502);
      expect(a.failure).toBe('bad_gateway');
      expect(u.seen).toHaveLength(0);
    });

    it('counts a try as outstanding on its target while it runs, and reports how it ended', async () => {
      const [slow] = await serve('slow');
      const { targets, events } = forwarder([slow.url]);
      const pending = gateway.request('/');
      while (slow.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      expect(targets.outstanding()).toEqual({ [slow.key]: 1 });
      expect((await pending).body.toString()).toBe('u1');
      expect(targets.outstanding()).toEqual({ [slow.key]: 0 });
      expect(targets.reports).toEqual([[slow.key, 'ok']]);
      expect(events.attempts).toEqual([[slow.key, 'ok']]);
    });
  });

  describe('retries', () => {
    it('tries a GET refused by one target on the next', async () => {
      const [ok] = await serve('ok');
      const { targets, events } = forwarder([refused, ok.url]);
      const a = await gateway.request('/r');
      expect(a.status).toBe(200);
      expect(echoed(a).name).toBe('u1');
      expect(events.retries).toEqual(['not_sent']);
      expect(events.attempts).toEqual([
        [keyOf(refused), 'connect_failure'],
        [ok.key, 'ok'],
      ]);
      expect(targets.outstanding()).toEqual({ [keyOf(refused)]: 0, [ok.key]: 0 });
    });

    it('tries a POST refused by one target on the next: it was never sent', async () => {
      const [ok] = await serve('ok');
      const { events } = forwarder([refused, ok.url]);
      const a = await gateway.request('/p', 'POST', 'the body');
      expect(a.status).toBe(200);
      expect(echoed(a)).toMatchObject({ method: 'POST', body: 'the body' });
      expect(events.retries).toEqual(['not_sent']);
    });

    it('tries a GET again on another target when the first reset after it was sent, the body sent again', async () => {
      const [reset, ok] = await serve('reset', 'ok');
      const { events } = forwarder([reset.url, ok.url]);
      const a = await gateway.request('/g', 'PUT', 'again');
      expect(a.status).toBe(200);
      expect(echoed(a)).toMatchObject({ name: 'u2', method: 'PUT', body: 'again' });
      expect(reset.seen.map((s) => s.body)).toEqual(['again']);
      expect(events.retries).toEqual(['sent']);
      expect(events.attempts).toEqual([
        [reset.key, 'reset'],
        [ok.key, 'ok'],
      ]);
    });

    it('does not send a POST again once a target may have acted on it: 502', async () => {
      const [reset, ok] = await serve('reset', 'ok');
      const { events } = forwarder([reset.url, ok.url]);
      const a = await gateway.request('/p', 'POST', 'once');
      expect(a.status).toBe(502);
      expect(a.failure).toBe('bad_gateway');
      expect(reset.seen).toHaveLength(1);
      expect(ok.seen).toHaveLength(0);
      expect(events.retries).toEqual([]);
    });

    it('does not send a GET again when its route says retry: false, but still tries one that was not sent', async () => {
      const [reset, ok] = await serve('reset', 'ok');
      forwarder([reset.url, ok.url]);
      state.route = { retry: false, timeouts: {} };
      expect((await gateway.request('/g')).status).toBe(502);
      expect(ok.seen).toHaveLength(0);
      await state.forwarder!.close();
      const { events } = forwarder([refused, ok.url]);
      expect((await gateway.request('/g')).status).toBe(200);
      expect(events.retries).toEqual(['not_sent']);
    });

    it('makes at most `attempts` retries, then answers the last failure', async () => {
      const others = await Promise.all([closedPort(), closedPort(), closedPort()]);
      const [ok] = await serve('ok');
      const { events } = forwarder([refused, ...others, ok.url], { retries: { attempts: 2 } });
      const a = await gateway.request('/');
      expect(a.status).toBe(502);
      expect(events.attempts.map(([, r]) => r)).toEqual(['connect_failure', 'connect_failure', 'connect_failure']);
      expect(events.retries).toHaveLength(2);
      expect(ok.seen).toHaveLength(0);
    });

    it('makes no retry of a sent request the budget refuses: the failure answers and the refusal is counted', async () => {
      const [reset, ok] = await serve('reset', 'ok');
      const { events } = forwarder([reset.url, ok.url], { retries: { budgetPercent: 0, minConcurrent: 0 } });
      const a = await gateway.request('/');
      expect(a.status).toBe(502);
      expect(events.exhausted).toBe(1);
      expect(events.retries).toEqual([]);
      expect(ok.seen).toHaveLength(0);
    });

    it('retries a request that was not sent whatever the budget: it added no load to the service', async () => {
      const [ok] = await serve('ok');
      const { events } = forwarder([refused, ok.url], { retries: { budgetPercent: 0, minConcurrent: 0 } });
      const a = await gateway.request('/', 'POST', 'x');
      expect(a.status).toBe(200);
      expect(events.exhausted).toBe(0);
      expect(events.retries).toEqual(['not_sent']);
      expect(ok.seen).toHaveLength(1);
    });

    it('keeps retries in flight within the budget while other requests run', async () => {
      // minConcurrent 1, 0 %: one retry at a time. The first request's retry hangs on its second target
      // while the second request's first try fails: that retry is refused.
      const [reset, hang] = await serve('reset', 'hang');
      const { events } = forwarder([reset.url, hang.url], {
        retries: { attempts: 1, budgetPercent: 0, minConcurrent: 1 },
        timeouts: { headMs: 2_000 },
      });
      const first = gateway.request('/1');
      while (hang.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      const second = await gateway.request('/2');
      expect(second.status).toBe(502);
      expect(events.exhausted).toBe(1);
      expect((await first).status).toBe(504);
      expect(events.retries).toEqual(['sent']);
    });

    it('tries an idempotent request answered 503 on another target before anything reaches the client', async () => {
      const [busy, ok] = await serve('503', 'ok');
      const { events, targets } = forwarder([busy.url, ok.url]);
      const a = await gateway.request('/');
      expect(a.status).toBe(200);
      expect(echoed(a).name).toBe('u2');
      expect(targets.reports).toEqual([
        [busy.key, 'status_5xx'],
        [ok.key, 'ok'],
      ]);
      expect(events.retries).toEqual(['sent']);
    });

    it('relays a 503 as it came to a POST, and to a GET with no other target', async () => {
      const [busy, ok] = await serve('503', 'ok');
      forwarder([busy.url, ok.url]);
      const post = await gateway.request('/', 'POST', 'x');
      expect(post.status).toBe(503);
      expect(post.headers['retry-after']).toBe('5');
      expect(post.body.toString()).toBe('u1 is busy');
      await state.forwarder!.close();
      const { events } = forwarder([busy.url]);
      const get = await gateway.request('/');
      expect(get.status).toBe(503);
      expect(events.retries).toEqual([]);
      expect(ok.seen).toHaveLength(0);
    });

    it('aborts the try and makes no other when the client goes away', async () => {
      const [hang, ok] = await serve('hang', 'ok');
      const { events, targets } = forwarder([hang.url, ok.url]);
      const http = await import('node:http');
      const req = http.request(gateway.url + '/', { agent: false });
      req.on('error', () => {});
      req.end();
      while (hang.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      req.destroy();
      await hang.idle();
      expect(events.retries).toEqual([]);
      expect(ok.seen).toHaveLength(0);
      expect(targets.outstanding()).toEqual({ [hang.key]: 0, [ok.key]: 0 });
    });
  });

  describe('timeouts', () => {
    it("a route's head bound ends a silent try and the next target answers", async () => {
      const [hang, ok] = await serve('hang', 'ok');
      const { events } = forwarder([hang.url, ok.url]);
      state.route = { retry: true, timeouts: { headMs: 200 } };
      const a = await gateway.request('/');
      expect(a.status).toBe(200);
      expect(events.attempts).toEqual([
        [hang.key, 'timeout'],
        [ok.key, 'ok'],
      ]);
    });

    it("a route's head bound above the global one is held to the global one: 504", async () => {
      const [hang] = await serve('hang');
      forwarder([hang.url], {}, 300);
      // Were the route's bound applied, the request would outlast the test's own timeout.
      state.route = { retry: true, timeouts: { headMs: 600_000, idleMs: 600_000 } };
      const a = await gateway.request('/');
      expect(a.status).toBe(504);
      expect(a.failure).toBe('gateway_timeout');
    });

    it('every try of a request ends within the global bound from its first hand-over', async () => {
      // Global 1 s, the route's head bound 900 ms: the first try times out at 900 ms, the second has what
      // is left (100 ms), and its target would answer 850 ms in, within the second try's own 900 ms.
      const [hang, slow] = await serve('hang', 'slow');
      slow.delayMs = 850;
      const { events } = forwarder([hang.url, slow.url], {}, 1_000);
      state.route = { retry: true, timeouts: { headMs: 900 } };
      const a = await gateway.request('/');
      expect(a.status).toBe(504);
      expect(events.attempts).toEqual([
        [hang.key, 'timeout'],
        [slow.key, 'timeout'],
      ]);
    });

    it("a route's connect bound moves a request waiting for a connection to another target, POST included", async () => {
      const [hang, ok] = await serve('hang', 'ok');
      // Two targets share two connections: one each. The first request holds the hanging target's.
      forwarder([hang.url, ok.url], {}, 5_000, 2);
      state.route = { retry: false, timeouts: { headMs: 1_000 } };
      const holding = gateway.request('/hold');
      while (hang.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      state.route = { retry: true, timeouts: { connectMs: 150 } };
      const a = await gateway.request('/p', 'POST', 'moved');
      expect(a.status).toBe(200);
      expect(echoed(a)).toMatchObject({ name: 'u2', body: 'moved' });
      expect(hang.seen).toHaveLength(1);
      expect((await holding).status).toBe(504);
    });

    it("a route's idle bound closes the client's connection when the body falls silent after the head", async () => {
      const [stall] = await serve('stall');
      // Were the service's (the global) bound applied, the request would outlast the test's own timeout.
      forwarder([stall.url], {}, 600_000);
      state.route = { retry: true, timeouts: { idleMs: 150 } };
      await expect(gateway.request('/')).rejects.toThrow();
      await stall.idle();
    });
  });

  describe('answers', () => {
    it('streams a body in chunks unchanged, with its fields', async () => {
      const [s] = await serve('stream');
      forwarder([refused, s.url]);
      const a = await gateway.request('/stream');
      expect(a.status).toBe(200);
      expect(a.headers['x-from']).toBe('u1');
      expect(a.body.equals(Buffer.concat(Array.from({ length: CHUNKS }, (_, i) => chunk(i))))).toBe(true);
    });
  });

  describe('pools', () => {
    it("closes a gone target's pool once its request is done, and sends no more to it", async () => {
      const [slow, ok] = await serve('slow', 'ok');
      const { targets } = forwarder([slow.url, ok.url]);
      const pending = gateway.request('/in-flight');
      while (slow.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      targets.change([ok.url]);
      expect((await pending).body.toString()).toBe('u1');
      await slow.idle();
      expect(slow.open()).toBe(0);
      const a = await gateway.request('/after');
      expect(echoed(a).name).toBe('u2');
      expect(slow.seen).toHaveLength(1);
    });

    it('close() leaves no connection open', async () => {
      const [a, b] = await serve('ok', 'ok');
      const { targets } = forwarder([a.url, b.url]);
      await gateway.request('/1');
      targets.change([b.url, a.url]);
      await gateway.request('/2');
      expect(a.open() + b.open()).toBeGreaterThan(0);
      await state.forwarder!.close();
      state.forwarder = null;
      await Promise.all([a.idle(), b.idle()]);
      expect(a.open() + b.open()).toBe(0);
    });
  });
});
