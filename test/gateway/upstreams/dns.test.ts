// Host-name targets: the URL itself until the first answer, then one target per address, kept up to
// date on a schedule and after a connect failure, with a target's state surviving the answers that
// keep it. Through an injected lookup on the fake clock, and once through a real DNS server.
import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolverFor } from '../../../src/gateway/upstreams/dns.js';
import { createTargetSet } from '../../../src/gateway/upstreams/targets.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { listenLocal } from '../../helpers/listen.js';
import { EventLog, fakeTime, makeSet, service, settle, tally } from './target-kit.js';

afterEach(() => void vi.useRealTimers());

/** A lookup the test answers: `answer` is returned (or thrown) for every name; `calls` counts them. */
function lookup(initial: string[] = []) {
  const state = { answer: initial as string[] | Error, calls: 0 };
  const resolve = vi.fn(async (host: string) => {
    state.calls++;
    if (host !== 'api.internal') throw new Error(`asked for ${host}`);
    if (state.answer instanceof Error) throw state.answer;
    return state.answer;
  });
  return { state, resolve };
}

const keys = (set: { all(): readonly { key: string }[] }) => set.all().map((t) => t.key);

describe('a host-name target', () => {
  it('is the URL itself until the first answer', () => {
    fakeTime();
    const { set } = makeSet({ targets: ['http://api.internal:9000/v1/'] }, lookup(['10.0.0.1']));
    expect({ ...set.pick() }).toMatchObject({
      key: 'api.internal:9000',
      origin: 'http://api.internal:9000',
      authority: 'api.internal:9000',
      basePath: '/v1',
    });
  });

  it('becomes one target per address, the Host still the configured one', async () => {
    fakeTime();
    const dns = lookup(['10.0.0.2', '10.0.0.1', 'fd00::5', '10.0.0.1']);
    const { set, events } = makeSet({ targets: ['http://api.internal:9000/v1', 'http://10.9.9.9:80'] }, dns);
    const changed = vi.fn();
    set.onChange(changed);
    set.start();
    await settle();
    expect(changed).toHaveBeenCalledTimes(1);
    expect(set.all().map((t) => [t.key, t.origin, t.authority, t.basePath])).toEqual([
      ['10.0.0.1:9000', 'http://10.0.0.1:9000', 'api.internal:9000', '/v1'],
      ['10.0.0.2:9000', 'http://10.0.0.2:9000', 'api.internal:9000', '/v1'],
      ['[fd00::5]:9000', 'http://[fd00::5]:9000', 'api.internal:9000', '/v1'],
      ['10.9.9.9:80', 'http://10.9.9.9', '10.9.9.9', ''],
    ]);
    expect(events.lookups).toEqual([{ host: 'api.internal', addresses: ['10.0.0.1', '10.0.0.2', 'fd00::5'] }]);
    expect(Object.keys(tally(set, 400)).sort()).toEqual(keys(set).sort());
    set.close();
  });

  it('follows a changed answer: targets that stay keep their state, gone ones are dropped and told', async () => {
    fakeTime();
    const dns = lookup(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    const { set, events } = makeSet(
      { targets: ['http://api.internal:9000'], dns: { refreshSeconds: 10 }, passive: { consecutiveFailures: 1 } },
      dns,
    );
    const changed = vi.fn();
    set.onChange(changed);
    set.start();
    await settle();
    const [a, b, c] = set.all();
    b.outstanding = 7;
    set.report(c, 'status_5xx');
    expect(events.list).toEqual(['ejected 10.0.0.3:9000 passive 30000']);

    dns.state.answer = ['10.0.0.2', '10.0.0.3', '10.0.0.4'];
    await vi.advanceTimersByTimeAsync(10_000);
    expect(changed).toHaveBeenCalledTimes(2);
    expect(keys(set)).toEqual(['10.0.0.2:9000', '10.0.0.3:9000', '10.0.0.4:9000']);
    expect(set.all()[0]).toBe(b);
    expect(set.all()[1]).toBe(c);
    expect(b.outstanding).toBe(7);
    expect(set.health()[1]).toMatchObject({ key: '10.0.0.3:9000', healthy: false });
    expect(set.healthyCount()).toBe(2);
    expect(tally(set, 200)).not.toHaveProperty('10.0.0.1:9000');
    // A late result on a dropped target changes no health.
    set.report(a, 'status_5xx');
    expect(events.list).toHaveLength(1);
    set.close();
  });

  it('asks again every refresh interval; the same addresses in another order are no change', async () => {
    fakeTime();
    const dns = lookup(['10.0.0.1', '10.0.0.2']);
    const { set, events } = makeSet({ targets: ['http://api.internal:9000'], dns: { refreshSeconds: 5 } }, dns);
    const changed = vi.fn();
    set.onChange(changed);
    set.start();
    await settle();
    dns.state.answer = ['10.0.0.2', '10.0.0.1'];
    await vi.advanceTimersByTimeAsync(4999);
    expect(dns.state.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(dns.state.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(dns.state.calls).toBe(4);
    expect([changed.mock.calls.length, events.lookups.length]).toEqual([1, 1]);
    set.close();
  });

  it('keeps its last addresses when a lookup fails or answers none', async () => {
    fakeTime();
    const dns = lookup(['10.0.0.1', '10.0.0.2']);
    const { set, events } = makeSet({ targets: ['http://api.internal:9000'], dns: { refreshSeconds: 1 } }, dns);
    set.start();
    await settle();
    const before = set.all();
    dns.state.answer = Object.assign(new Error('queryA ESERVFAIL api.internal'), { code: 'ESERVFAIL' });
    await vi.advanceTimersByTimeAsync(1000);
    dns.state.answer = [];
    await vi.advanceTimersByTimeAsync(1000);
    expect(set.all()).toBe(before);
    expect(events.lookups.slice(1)).toEqual([
      { host: 'api.internal', addresses: ['10.0.0.1', '10.0.0.2'], error: 'ESERVFAIL' },
      { host: 'api.internal', addresses: ['10.0.0.1', '10.0.0.2'], error: 'no address' },
    ]);
    set.close();
  });

  it('keeps the URL itself when the first lookup fails', async () => {
    fakeTime();
    const dns = lookup();
    dns.state.answer = new Error('getaddrinfo ENOTFOUND api.internal');
    const { set, events } = makeSet({ targets: ['http://api.internal:9000'] }, dns);
    set.start();
    await settle();
    expect(keys(set)).toEqual(['api.internal:9000']);
    expect(events.lookups).toEqual([
      { host: 'api.internal', addresses: [], error: 'getaddrinfo ENOTFOUND api.internal' },
    ]);
    set.close();
  });

  it('is looked up again soon after a connect failure, at most once a second', async () => {
    fakeTime();
    const dns = lookup(['10.0.0.1', '10.0.0.2']);
    const { set } = makeSet({ targets: ['http://api.internal:9000'], dns: { refreshSeconds: 60 } }, dns);
    set.start();
    await settle();
    expect(dns.state.calls).toBe(1);
    const [a, b] = set.all();
    // Within the second of the last lookup: one more, when the second is over.
    set.report(a, 'connect_failure');
    set.report(b, 'connect_failure');
    await vi.advanceTimersByTimeAsync(999);
    expect(dns.state.calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(dns.state.calls).toBe(2);
    // Long after: at once. Other failures ask for none.
    await vi.advanceTimersByTimeAsync(5000);
    set.report(a, 'connect_failure');
    await settle();
    expect(dns.state.calls).toBe(3);
    set.report(a, 'timeout');
    set.report(a, 'status_5xx');
    await vi.advanceTimersByTimeAsync(5000);
    expect(dns.state.calls).toBe(3);
    set.close();
  });

  it('an IP literal is never looked up', async () => {
    fakeTime();
    const dns = lookup();
    const { set } = makeSet({ targets: ['http://10.0.0.1:9000', 'http://[::1]:9000'] }, dns);
    set.start();
    set.report(set.all()[0], 'connect_failure');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(dns.resolve).not.toHaveBeenCalled();
    set.close();
  });
});

describe('close()', () => {
  it('leaves no timer, and a late answer changes nothing', async () => {
    fakeTime();
    let answer!: (a: string[]) => void;
    const resolve = vi.fn(() => new Promise<string[]>((r) => (answer = r)));
    const probe = vi.fn(() => new Promise<boolean>(() => {}));
    const { set, events } = makeSet(
      {
        targets: ['http://api.internal:9000', 'http://10.0.0.9:80', 'http://10.0.0.8:80'],
        passive: { consecutiveFailures: 1 },
        probe: { path: '/h' },
      },
      { resolve, probe },
    );
    const changed = vi.fn();
    set.onChange(changed);
    set.start();
    set.report(set.all()[1], 'connect_failure');
    set.report(set.all()[0], 'connect_failure');
    expect(vi.getTimerCount()).toBeGreaterThanOrEqual(3);
    set.close();
    expect(vi.getTimerCount()).toBe(0);
    answer(['10.0.0.1']);
    await vi.advanceTimersByTimeAsync(600_000);
    expect([changed.mock.calls.length, events.lookups.length, resolve.mock.calls.length]).toEqual([0, 0, 1]);
  });

  it('abandons the default probe in flight', async () => {
    const silent = net.createServer(() => {});
    const { url } = await listenLocal(silent);
    const events = new EventLog();
    const set = createTargetSet(service({ targets: [url], probe: { path: '/h', timeoutMs: 60_000 } }), {
      clock: { now: () => Date.now() },
      events,
    });
    const closed = new Promise<void>((r) => silent.on('connection', (s) => s.on('close', () => r())));
    set.start();
    await new Promise<void>((r) => silent.once('connection', () => r()));
    set.close();
    // The probe's connection is closed by the gateway's side, long before its timeout.
    await closed;
    await new Promise<void>((r) => silent.close(() => r()));
  });
});

describe('a real lookup', () => {
  it('UPSTREAM_DNS_SERVER: A and AAAA records through a DNS server', async () => {
    const server = await startDnsServer({
      'api.test': { a: ['127.0.0.2', '127.0.0.3'], aaaa: ['fd00::1:2'] },
      'v4.test': { a: ['127.0.0.4'] },
      'txt.test': { txt: ['hello'] },
    });
    try {
      const resolve = resolverFor(server.address);
      expect((await resolve('api.test')).sort()).toEqual(['127.0.0.2', '127.0.0.3', 'fd00::1:2']);
      expect(await resolve('v4.test')).toEqual(['127.0.0.4']);
      await expect(resolve('nowhere.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
      await expect(resolve('txt.test')).rejects.toMatchObject({ code: 'ENODATA' });

      const events = new EventLog();
      const answered = new Promise<void>((r) => (events.resolved = () => r()));
      const set = createTargetSet(service({ targets: ['http://api.test:8080/base'] }), {
        clock: { now: () => Date.now() },
        events,
        resolve,
      });
      set.start();
      await answered;
      expect(set.all().map((t) => [t.origin, t.authority])).toEqual([
        ['http://127.0.0.2:8080', 'api.test:8080'],
        ['http://127.0.0.3:8080', 'api.test:8080'],
        ['http://[fd00::1:2]:8080', 'api.test:8080'],
      ]);
      set.close();
    } finally {
      await server.close();
    }
  });

  it("without a server, the system's resolver (/etc/hosts included)", async () => {
    expect(await resolverFor()('localhost')).toEqual(expect.arrayContaining([expect.stringMatching(/^(127\.|::1)/)]));
  });
});
