// The registry keeps one upstream per service configuration: a reload keeps an unchanged service's
// (its health state with it), replaces a changed one only after the requests matched under it, and a
// request always gets the upstream of the configuration it matched under.
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseRoutes } from '../../../src/config/routes.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { Upstreams } from '../../../src/gateway/upstreams/registry.js';
import { fakeTime } from './target-kit.js';

const base = JSON.parse(readFileSync('config/routes.json', 'utf8')) as Record<string, unknown>;
const routesWith = (services: Record<string, unknown>) => parseRoutes({ ...base, services });

function registry(retireAfterMs = 60_000) {
  const clock = fakeTime();
  const metrics = createMetrics();
  const upstreams = new Upstreams({
    upstream: 'http://127.0.0.1:1',
    timeoutMs: 1000,
    maxSockets: 8,
    ownCors: false,
    retireAfterMs,
    clock,
    log: pino({ level: 'silent' }),
    metrics: metrics.upstreams,
  });
  return { upstreams, metrics };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the upstreams registry', () => {
  it('gives the implicit default service the process upstream', async () => {
    const { upstreams } = registry();
    const r = parseRoutes(base);
    upstreams.sync(r.services);
    const u = upstreams.of(r.v2.all[0].service);
    expect(u.config.targets).toEqual([{ url: 'http://127.0.0.1:1', weight: 1 }]);
    expect(upstreams.of(undefined)).toBe(u);
    expect(upstreams.health()).toEqual([{ service: 'default', healthy: 1, targets: 1 }]);
    await upstreams.close();
  });

  it('gives a route without a service the implicit default, with every setting, before any sync', async () => {
    const { upstreams } = registry();
    const u = upstreams.of(undefined);
    expect(u.config.targets).toEqual([{ url: 'http://127.0.0.1:1', weight: 1 }]);
    expect(u.config.retries.attempts).toBe(2);
    expect(upstreams.of(undefined)).toBe(u);
    await upstreams.close();
  });

  it('keeps an unchanged service across a reload and replaces a changed one after the old requests', async () => {
    const { upstreams } = registry(60_000);
    const one = routesWith({ a: { targets: ['http://127.0.0.2:1'] }, b: { targets: ['http://127.0.0.3:1'] } });
    upstreams.sync(one.services);
    const a1 = upstreams.of(one.services.get('a'));
    const b1 = upstreams.of(one.services.get('b'));
    const two = routesWith({ a: { targets: ['http://127.0.0.2:1'] }, b: { targets: ['http://127.0.0.4:1'] } });
    upstreams.sync(two.services);
    expect(upstreams.of(two.services.get('a'))).toBe(a1);
    const b2 = upstreams.of(two.services.get('b'));
    expect(b2).not.toBe(b1);
    expect(b2.config.targets[0].url).toBe('http://127.0.0.4:1');
    // A request matched under the first configuration is still forwarded by it.
    expect(upstreams.of(one.services.get('b'))).toBe(b1);
    const closed = vi.spyOn(b1.targets, 'close');
    vi.advanceTimersByTime(59_000);
    expect(closed).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1_000);
    expect(closed).toHaveBeenCalledOnce();
    expect(
      upstreams
        .health()
        .map((h) => h.service)
        .sort(),
    ).toEqual(['a', 'b', 'default']);
    await upstreams.close();
  });

  it('retires a service the new configuration no longer has', async () => {
    const { upstreams, metrics } = registry(1_000);
    const one = routesWith({ gone: { targets: ['http://127.0.0.2:1'] } });
    upstreams.sync(one.services);
    const gone = upstreams.of(one.services.get('gone'));
    const closed = vi.spyOn(gone.targets, 'close');
    upstreams.sync(parseRoutes(base).services);
    expect(upstreams.health().map((h) => h.service)).toEqual(['default']);
    vi.advanceTimersByTime(1_000);
    expect(closed).toHaveBeenCalledOnce();
    const text = await metrics.registry.metrics();
    expect(text).toContain('keygate_upstream_healthy_targets{service="default"} 1');
    expect(text).not.toContain('service="gone"');
    await upstreams.close();
  });

  it('closes every upstream and its timers at close', async () => {
    const { upstreams } = registry();
    const r = routesWith({ a: { targets: ['http://127.0.0.2:1'], probe: { path: '/healthz' } } });
    upstreams.sync(r.services);
    const a = upstreams.of(r.services.get('a'));
    const closed = vi.spyOn(a.targets, 'close');
    await upstreams.close();
    expect(closed).toHaveBeenCalledOnce();
    expect(vi.getTimerCount()).toBe(0);
  });
});
