// Issue 37, from outside: the gateway program (keygate gateway) in front of real upstream processes
// (test/helpers/upstream-fleet.ts), one service per behaviour in one routes file: a target killed under
// load, a target that hangs, a target that answers 5xx, and a service left with no healthy target
// (/readyz names it). Counts, not times: every assertion is about which answers came and who sent them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProgram, type GatewayProgram } from '../helpers/gateway-program.js';
import { startFleet, writeRoutesFile, type UpstreamFleet } from '../helpers/upstream-fleet.js';
import { gatewayClient, statuses, tally, type Answer, type Step } from './traffic.js';

const TAGS = '/v2/workspaces/100/tags';
const NOTIFICATIONS = '/v2/workspaces/100/notifications';
const MEMBERS = '/v2/workspaces/100/members';
const OVERVIEW = '/v2/workspaces/100/analytics/overview';
const SERVICE_OF: Record<string, string> = {
  [`/v2/workspaces/{workspaceId}/tags`]: 'trio',
  [`/v2/workspaces/{workspaceId}/notifications`]: 'hang',
  [`/v2/workspaces/{workspaceId}/members`]: 'flaky',
  [`/v2/workspaces/{workspaceId}/analytics/overview`]: 'lonely',
};
// The probe's own requests land in the targets' logs too: the tests count the proxied ones.
const PROBE_PATH = '/healthz';

let dir: string;
let gateway: GatewayProgram;
let trio: UpstreamFleet;
let others: UpstreamFleet;
let client: ReturnType<typeof gatewayClient>;

const get = (path: string): Step => ({ method: 'GET', path });
/** The gateway's keygate_upstream_* series: what a failed assertion shows. */
const upstreamSeries = async () =>
  (await (await fetch(`http://127.0.0.1:${gateway.admin}/metrics`)).text())
    .split('\n')
    .filter((l) => l.startsWith('keygate_upstream_'))
    .join('\n');
const proxied = (fleet: UpstreamFleet, name: string) =>
  fleet.targets
    .find((t) => t.name === name)!
    .received()
    .filter((r) => r.path !== PROBE_PATH);
const target = (fleet: UpstreamFleet, name: string) => fleet.targets.find((t) => t.name === name)!;

// The gateway program is another process on a real PostgreSQL (test/helpers/gateway-program.ts).
describe.skipIf(!process.env.DATABASE_URL)('services: failover through the real program', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'services-failover-'));
    // An answer takes 20 ms, so a kill finds requests in flight on its target.
    trio = await startFleet([{ name: 't1' }, { name: 't2' }, { name: 't3' }], { delayMs: 20 });
    others = await startFleet(['h1', 'h2', 'f1', 'f2', 'l1', 'l2'].map((name) => ({ name })));
    const url = (name: string) => target(others, name).url;
    const probe = { path: PROBE_PATH, intervalMs: 200, timeoutMs: 500 };
    writeRoutesFile(
      join(dir, 'routes.json'),
      {
        trio: {
          targets: trio.targets.map((t) => t.url),
          passive: { consecutiveFailures: 3, baseEjectionMs: 500, maxEjectionMs: 2_000 },
        },
        // The ejection outlasts the test: once out, the hanging target gets nothing more.
        hang: {
          targets: [url('h1'), url('h2')],
          timeouts: { headMs: 400 },
          passive: { consecutiveFailures: 2, baseEjectionMs: 600_000, maxEjectionMs: 600_000 },
        },
        // A short passive ejection: while the target still fails, the probe is what keeps it out.
        flaky: {
          targets: [url('f1'), url('f2')],
          passive: { consecutiveFailures: 3, baseEjectionMs: 1_000 },
          probe: { ...probe, healthyThreshold: 2, unhealthyThreshold: 2 },
        },
        lonely: {
          targets: [url('l1'), url('l2')],
          passive: { maxEjectedPercent: 100 },
          probe: { ...probe, healthyThreshold: 1, unhealthyThreshold: 1 },
        },
      },
      (route) => SERVICE_OF[route.path],
    );
    gateway = await startGatewayProgram({
      ROUTES_FILE: join(dir, 'routes.json'),
      UPSTREAM_URL: trio.targets[0].url,
      LOG_LEVEL: 'info',
    });
    client = gatewayClient(gateway.port, 'fo');
  }, 180_000);

  afterAll(async () => {
    client?.close();
    await gateway?.close();
    await trio?.close();
    await others?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a target killed under load: no idempotent request lost, only POSTs already sent fail, each a 502 in the envelope', async () => {
    const t2 = target(trio, 't2');
    let killedAt = 0;
    // Every third request a POST; the kill comes once 45 answers are in, with 6 in flight. Least-request
    // puts at most 3 of 6 on one target of three, so the GETs the kill cuts (sent: retried within the
    // retry budget) never outnumber the budget's floor of 3; the requests then on their way to the dead
    // target (not sent: outside the budget) may be any number.
    const step = (i: number): Step => (i % 3 === 0 ? { method: 'POST', path: TAGS } : get(TAGS));
    const answers = await client.load(180, 6, step, {
      45: async () => {
        await t2.kill();
        killedAt = Date.now();
      },
    });
    const out = `${JSON.stringify(answers.filter((a) => a.status !== 200))}\n${await upstreamSeries()}`;
    // What t2 had received and not answered when it died, and what became of each.
    const byT2 = new Set(answers.filter((a) => a.upstream === 't2').map((a) => a.id));
    const cut = t2.received().filter((r) => r.requestId.startsWith('fo-') && !byT2.has(r.requestId));
    const cutAnswers = answers.filter((a) => cut.some((r) => r.requestId === a.id));
    const gets = answers.filter((a) => a.method === 'GET');
    expect.soft(statuses(gets), out).toEqual({ 200: gets.length });
    const failedPosts = answers.filter((a) => a.method === 'POST' && a.status !== 200);
    for (const a of failedPosts) {
      expect.soft(a.status, JSON.stringify(a)).toBe(502);
      expect.soft(a.body?.error?.code, JSON.stringify(a)).toBe('bad_gateway');
      // Sent before the target was gone: in flight on it when it died.
      expect.soft(a.sent, JSON.stringify(a)).toBeLessThanOrEqual(killedAt);
    }
    // Sent after the kill, whatever the method: answered by the two left.
    const after = answers.filter((a) => a.sent > killedAt);
    expect.soft(after.length).toBeGreaterThan(100);
    expect.soft(statuses(after), out).toEqual({ 200: after.length });
    expect.soft(Object.keys(tally(after)).sort()).toEqual(['t1', 't3']);
    // The load did reach the killed target, and no POST reached two targets (none was run twice; a
    // GET that t2 read before it died is received again by the target it was retried on).
    expect.soft(t2.received().length).toBeGreaterThan(0);
    const twice = [...trio.receivers()].filter(([id, by]) => by.length > 1 && id.startsWith('fo-'));
    const postsTwice = twice.filter(([id]) => answers.find((a) => a.id === id)?.method === 'POST');
    expect.soft(postsTwice, JSON.stringify(cutAnswers)).toEqual([]);
    // Each POST cut by the kill failed with a 502; each GET cut by it was answered by another target.
    for (const a of cutAnswers) {
      if (a.method === 'POST') expect.soft(a.status, JSON.stringify(a)).toBe(502);
      else expect.soft(a.status, JSON.stringify(a)).toBe(200);
    }

    // Back on its address: it is used again once its ejection is over, and nothing fails meanwhile.
    await t2.restart();
    const restartedAt = Date.now();
    const back = await client.until(
      () => t2.received().some((r) => r.at >= restartedAt),
      (i) => (i % 3 === 0 ? { method: 'POST', path: TAGS } : get(TAGS)),
      { batch: 12, concurrency: 4 },
    );
    expect(statuses(back), out).toEqual({ 200: back.length });
  }, 120_000);

  it('a target that hangs: its requests time out and go to the other target, and it is ejected', async () => {
    const h1 = target(others, 'h1');
    await h1.mode('hang');
    const answers = await client.load(30, 2, () => get(NOTIFICATIONS));
    // Every request answered by h2, those that waited on h1 included (a GET is tried again).
    expect(statuses(answers), gateway.output()).toEqual({ 200: 30 });
    expect(tally(answers)).toEqual({ h2: 30 });
    // h1 was tried, and after its second timeout in a row it was out: at most that, plus one
    // request per client connection already on its way.
    const onH1 = proxied(others, 'h1').length;
    expect(onH1).toBeGreaterThan(0);
    expect(onH1).toBeLessThanOrEqual(2 + 2);
    await h1.mode('ok');
  }, 60_000);

  it('a target answering 503 is ejected, kept out by the probe while it fails, and re-admitted once it recovers', async () => {
    const f1 = target(others, 'f1');
    await f1.mode('503');
    // Batches with pauses, well past the passive ejection's second: without the probe, f1 would be
    // back after it and answer 503 again.
    for (let b = 0; b < 10; b++) {
      await client.load(10, 2, () => get(MEMBERS));
      await new Promise((r) => setTimeout(r, 200));
    }
    const onF1 = proxied(others, 'f1').length;
    expect(onF1).toBeGreaterThan(0);
    // Ejected after 3 failures in a row (or 2 failed probes): at most those and one per connection.
    expect(onF1).toBeLessThanOrEqual(3 + 2);

    await f1.mode('ok');
    const recoveredAt = Date.now();
    const back = await client.until(
      () => proxied(others, 'f1').some((r) => r.at >= recoveredAt),
      () => get(MEMBERS),
      { batch: 10, concurrency: 2 },
    );
    expect(statuses(back), gateway.output()).toEqual({ 200: back.length });
  }, 60_000);

  it('/readyz names a service with no healthy target, and stops naming it once one is back', async () => {
    // `checks.services`: each service's state, `up` while it has an admitted target, else
    // `no_healthy_target`; the status stays the process's own (200: the other services serve).
    const services = async (): Promise<Record<string, string>> => {
      const r = await fetch(`http://127.0.0.1:${gateway.admin}/readyz`);
      expect(r.status).toBe(200);
      return ((await r.json()) as { checks: { services: Record<string, string> } }).checks.services;
    };
    /** The services' states once `want` holds of them (the checks run in the background, once a second). */
    const once = async (want: (s: Record<string, string>) => boolean) => {
      let seen = await services();
      for (let i = 0; i < 100 && !want(seen); i++) {
        await new Promise((r) => setTimeout(r, 100));
        seen = await services();
      }
      return seen;
    };
    expect(await once((s) => s.lonely === 'up')).toMatchObject({ lonely: 'up', trio: 'up' });
    const [l1, l2] = [target(others, 'l1'), target(others, 'l2')];
    await Promise.all([l1.kill(), l2.kill()]);
    const down = await once((s) => s.lonely !== 'up');
    expect(down.lonely).toBe('no_healthy_target');
    // The services that have admitted targets are still up.
    expect(down).toMatchObject({ trio: 'up', hang: 'up', flaky: 'up' });
    // A request to it gets the gateway's answer in the envelope, not a broken connection.
    const a: Answer = await client.request(get(OVERVIEW));
    expect(a.status, JSON.stringify(a)).toBe(502);
    expect(a.body?.error?.code).toBe('bad_gateway');

    await l1.restart();
    expect(await once((s) => s.lonely === 'up')).toMatchObject({ lonely: 'up' });
    await l2.restart();
  }, 60_000);
});
