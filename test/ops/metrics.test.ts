// The gateway's metrics kept in plain numbers on the request path (src/ops/metrics.ts) must read
// exactly as prom-client's own Counter and Histogram would.
import { describe, expect, it } from 'vitest';
import { Counter, Histogram, Registry } from 'prom-client';
import { createMetrics, FastHistogram } from '../../src/ops/metrics.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];
const block = (text: string, name: string) =>
  text
    .split('\n\n')
    .find((b) => b.includes(`# HELP ${name} `))!
    .trim();

describe('metrics on the request path', () => {
  it('a FastHistogram writes the text of a prom-client Histogram with the same observations', async () => {
    const mine = new Registry();
    const theirs = new Registry();
    const h = new FastHistogram<'route'>(mine, 'h_seconds', 'help text', BUCKETS);
    const ref = new Histogram({
      name: 'h_seconds',
      help: 'help text',
      labelNames: ['route'],
      buckets: BUCKETS,
      registers: [theirs],
    });
    // Values on bucket bounds, between them, beyond the last, for two label sets.
    const values = [0, 0.0005, 0.0007, 0.001, 0.004, 0.1, 0.2500001, 5, 6, 1e6];
    for (const [i, v] of values.entries()) {
      const route = i % 3 === 0 ? '/a' : '/b/{id}';
      h.series(route, () => ({ route })).observe(v);
      ref.observe({ route }, v);
    }
    expect(await mine.metrics()).toBe(await theirs.metrics());
    expect(JSON.stringify(await mine.getMetricsAsJSON())).toContain('"h_seconds_bucket"');
  });

  it('counters tallied between scrapes add up to what prom-client counts', async () => {
    const m = createMetrics();
    const ref = new Registry();
    const requests = new Counter({
      name: 'keygate_requests_total',
      help: 'Gateway responses by route template, method, status and Envelope A code.',
      labelNames: ['route', 'method', 'status', 'code'],
      registers: [ref],
    });
    const record = (route: string, status: number, code: string | null) => {
      m.request(route, 'GET', status, code, 1);
      requests.inc({ route, method: 'GET', status: String(status), code: code ?? '' });
    };
    record('/v2/workspaces/{workspaceId}/tags', 200, null);
    record('/v2/workspaces/{workspaceId}/tags', 429, '150005');
    expect(block(await m.registry.metrics(), 'keygate_requests_total')).toBe(
      block(await ref.metrics(), 'keygate_requests_total'),
    );
    // Counts made after a scrape are added to the next one, never lost or counted twice.
    record('/v2/workspaces/{workspaceId}/tags', 200, null);
    record('/v2/workspaces/{workspaceId}/tags', 200, null);
    expect(block(await m.registry.metrics(), 'keygate_requests_total')).toBe(
      block(await ref.metrics(), 'keygate_requests_total'),
    );
    expect(block(await m.registry.metrics(), 'keygate_requests_total')).toContain('status="200",code=""} 3');
  });
});
