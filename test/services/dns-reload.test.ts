// Issue 37, from outside: the gateway program in front of real upstream processes, for what changes
// while it runs: a host-name target whose DNS answer changes (test/helpers/dns-server.ts), a reload
// that replaces a service's targets under load, and a service whose path prefix is rewritten.
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { startGatewayProgram, type GatewayProgram } from '../helpers/gateway-program.js';
import { freePort } from '../helpers/redis-server.js';
import { startFleet, writeRoutesFile, type UpstreamFleet } from '../helpers/upstream-fleet.js';
import type { ServiceFile } from '../../src/config/services.js';
import { gatewayClient, statuses, tally, type Step } from './traffic.js';

const HOST = 'backend.services.test';
const OVERVIEW = '/v2/workspaces/100/analytics/overview';
const ACCOUNTS = '/v2/workspaces/100/accounts';
const TAGS = '/v2/workspaces/100/tags';
const SERVICE_OF: Record<string, string> = {
  [`/v2/workspaces/{workspaceId}/analytics/overview`]: 'named',
  [`/v2/workspaces/{workspaceId}/accounts`]: 'swap',
  [`/v2/workspaces/{workspaceId}/tags`]: 'prefixed',
};

let dir: string;
let dns: DnsServer;
let gateway: GatewayProgram;
let named: UpstreamFleet;
let swap: UpstreamFleet;
let prefixed: UpstreamFleet;
let client: ReturnType<typeof gatewayClient>;

const get = (path: string): Step => ({ method: 'GET', path });
const target = (fleet: UpstreamFleet, name: string) => fleet.targets.find((t) => t.name === name)!;

function services(swapTargets: string[]): Record<string, ServiceFile> {
  const d1 = target(named, 'd1');
  return {
    named: { targets: [`http://${HOST}:${d1.port}`], dns: { refreshSeconds: 1 } },
    swap: { targets: swapTargets },
    prefixed: { targets: [`${target(prefixed, 'p1').url}/base`], stripPrefix: '/v2' },
  };
}

/** The routes file replaced whole (a rename: the program never reads half of it), then SIGHUP. */
function reload(swapTargets: string[]) {
  writeRoutesFile(join(dir, 'next.json'), services(swapTargets), (route) => SERVICE_OF[route.path]);
  renameSync(join(dir, 'next.json'), join(dir, 'routes.json'));
  gateway.child.kill('SIGHUP');
}

// The gateway program is another process on a real PostgreSQL (test/helpers/gateway-program.ts).
describe.skipIf(!process.env.DATABASE_URL)('services: DNS, reload and prefixes through the real program', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'services-dns-reload-'));
    // One port on two loopback addresses: what a host name's two answers point at.
    const port = await freePort();
    named = await startFleet([
      { name: 'd1', host: '127.0.0.2', port },
      { name: 'd2', host: '127.0.0.3', port },
    ]);
    // 50 ms an answer: a reload finds requests in flight on the old targets.
    swap = await startFleet(
      ['r1', 'r2', 'r3', 'r4'].map((name) => ({ name })),
      { delayMs: 50 },
    );
    prefixed = await startFleet([{ name: 'p1' }]);
    dns = await startDnsServer({ [HOST]: { a: ['127.0.0.2'] } });
    writeRoutesFile(
      join(dir, 'routes.json'),
      services([target(swap, 'r1').url, target(swap, 'r2').url]),
      (route) => SERVICE_OF[route.path],
    );
    gateway = await startGatewayProgram({
      ROUTES_FILE: join(dir, 'routes.json'),
      UPSTREAM_URL: target(prefixed, 'p1').url,
      UPSTREAM_DNS_SERVER: dns.address,
      LOG_LEVEL: 'info',
    });
    client = gatewayClient(gateway.port, 'dr');
  }, 180_000);

  afterAll(async () => {
    client?.close();
    await gateway?.close();
    await Promise.all([named?.close(), swap?.close(), prefixed?.close()]);
    await dns?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a host name is re-resolved: its new addresses get the traffic, and nothing fails meanwhile', async () => {
    const [d1, d2] = [target(named, 'd1'), target(named, 'd2')];
    // Until the first answer of the lookup started with the program (not counted).
    await client.until(
      (batch) => batch.every((a) => a.upstream === 'd1'),
      () => get(OVERVIEW),
    );
    const all = await client.load(20, 4, () => get(OVERVIEW));
    expect(tally(all)).toEqual({ d1: 20 });

    // Scaled out: the name answers both addresses, and both get requests.
    dns.set(HOST, { a: ['127.0.0.2', '127.0.0.3'] });
    all.push(
      ...(await client.until(
        () => d2.received().length > 0,
        () => get(OVERVIEW),
      )),
    );
    // Moved: only the new address is left, and once the change is seen d1 gets nothing.
    dns.set(HOST, { a: ['127.0.0.3'] });
    all.push(
      ...(await client.until(
        (batch) => batch.every((a) => a.upstream === 'd2'),
        () => get(OVERVIEW),
      )),
    );
    await d1.kill();
    const last = await client.load(20, 4, () => get(OVERVIEW));
    expect(tally(last)).toEqual({ d2: 20 });
    all.push(...last);
    expect(statuses(all), gateway.output()).toEqual({ 200: all.length });
  }, 90_000);

  it('a reload under load that replaces the targets drops no request, and each is answered by one configuration', async () => {
    const [r1, r2, r3, r4] = ['r1', 'r2', 'r3', 'r4'].map((n) => target(swap, n));
    const answers = await client.load(200, 8, () => get(ACCOUNTS), {
      50: async () => reload([r3.url, r4.url]),
    });
    // The reload may land after the load: then requests go on until the new targets answer.
    answers.push(
      ...(await client.until(
        () => r3.received().length + r4.received().length > 0,
        () => get(ACCOUNTS),
      )),
    );
    expect(statuses(answers), gateway.output()).toEqual({ 200: answers.length });
    // Answered by the old targets, then the new, and by nobody else.
    const by = Object.keys(tally(answers));
    expect(
      by.every((n) => ['r1', 'r2', 'r3', 'r4'].includes(n)),
      JSON.stringify(tally(answers)),
    ).toBe(true);
    expect(by.some((n) => n === 'r1' || n === 'r2') && by.some((n) => n === 'r3' || n === 'r4')).toBe(true);
    // No request reached an old target and a new one.
    const mixed = [...swap.receivers()].filter(([, by]) => by.length > 1);
    expect(mixed).toEqual([]);

    // The old targets are out of the configuration: gone, and nothing notices.
    await Promise.all([r1.kill(), r2.kill()]);
    const after = await client.load(20, 4, () => get(ACCOUNTS));
    expect(statuses(after), gateway.output()).toEqual({ 200: 20 });
    expect(Object.keys(tally(after)).sort()).toEqual(['r3', 'r4']);
  }, 90_000);

  it('a service with stripPrefix gets the path without it, under its base path, the query kept', async () => {
    const a = await client.request(get(`${TAGS}?limit=5`));
    expect(a.status, JSON.stringify(a)).toBe(200);
    expect(a.upstream).toBe('p1');
    expect(a.body.data.path).toBe('/base/workspaces/100/tags?limit=5');
  }, 30_000);
});
