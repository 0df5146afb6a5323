// The console end to end in a real browser: headless Chromium (Debian's package) driven by
// playwright-core against the real program (`keygate start` with ADMIN_API_PORT, PostgreSQL and Redis),
// every page once at a laptop's width and the main ones at a phone's (390 px): sign in, the overview and
// search, an organization's history chart over 24 h, 7 d and 30 d (its totals equal to the API's) and
// its plan, a key created with expiry, metadata and scopes and its secret shown once, the key used
// through the gateway and its history, usage and limits moving, its name, expiry and metadata edited,
// admin tokens created and revoked, webhook endpoints with a failing receiver, deliveries and a replay,
// the audit trail, and the API's errors shown in the page. The history is seeded straight into its
// tables (30 days of one demo key) so the charts have points. Screenshots go to docs/console-*.png
// with CONSOLE_SCREENSHOTS=docs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { untilReady } from '../helpers/program.js';
import { listenLocal } from '../helpers/listen.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Needs a PostgreSQL server to create a database on, a Redis and Chromium (CI installs Debian's
// chromium package when it is absent); elsewhere the file is skipped.
const CAN = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL) && existsSync(CHROMIUM);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let child: ChildProcess | null = null;
let out = '';
let database = '';
let dbUrl = '';
let profile = '';
let context: BrowserContext;
let page: Page;
let adminApi = '';
let gateway = '';
let token = '';
let receiver: http.Server | null = null;
let receiverUrl = '';
/** The webhook receiver fails every attempt of the first event it is sent (500) and takes the others. */
let failing: string | null = null;
const received: string[] = [];
const foreign: string[] = [];
/** The key the console creates, and its secret. */
let keyId = 0;
let secret = '';

const admin = (url = process.env.DATABASE_URL) => new pg.Client({ connectionString: url });

// Every run takes its screenshots (a page that cannot render fails here too); they replace the ones in
// docs/ when CONSOLE_SCREENSHOTS=docs, so an ordinary run leaves the checkout as it was.
const shotsDir = process.env.CONSOLE_SCREENSHOTS === 'docs' ? 'docs' : mkdtempSync(join(tmpdir(), 'kg-console-shots-'));

async function shot(name: string) {
  await page.screenshot({ path: join(shotsDir, `console-${name}.png`), fullPage: true });
}

/** The admin API as the test reads it, with the token the start printed. */
async function apiGet(path: string, bearer = token): Promise<{ status: number; body: any }> {
  const res = await fetch(adminApi + path, { headers: { authorization: `Bearer ${bearer}` } });
  return { status: res.status, body: await res.json() };
}
async function apiSend(method: string, path: string, body: unknown) {
  const res = await fetch(adminApi + path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const OUTCOME_BASE: [string, number][] = [
  ['forwarded_2xx', 40],
  ['forwarded_4xx', 4],
  ['forwarded_5xx', 1],
  ['answered', 3],
  ['limited_key', 3],
  ['limited_address', 1],
  ['refused_unauthenticated', 2],
  ['refused_forbidden', 1],
];

/**
 * 7 days of hours and 30 days of days of one demo key (1000, of organization 1), straight into the
 * history's tables: a daily wave of traffic with refusals in some hours, so every chart has points.
 */
async function seedHistory(now: number) {
  const c = admin(dbUrl);
  await c.connect();
  try {
    for (const tbl of ['usage_hour', 'usage_day', 'usage_org_hour', 'usage_org_day'])
      for (const at of [now, now - 31 * DAY])
        await c.query('SELECT keygate_usage_partition($1, $2)', [tbl, new Date(at)]);
    const rows = async (tbl: string, step: number, count: number) => {
      const last = Math.floor(now / step) * step;
      const bucket: Date[] = [];
      const outcome: string[] = [];
      const n: number[] = [];
      for (let i = 0; i < count; i++) {
        const t = last - i * step;
        const hour = new Date(t).getUTCHours();
        const wave = step === HOUR ? 1.1 + Math.sin((2 * Math.PI * hour) / 24) : 24 * (1 + 0.3 * Math.sin(i));
        for (const [o, base] of OUTCOME_BASE) {
          const spiky = o.startsWith('forwarded') || o === 'answered' ? 1 : i % 5 === 0 ? 3 : 0.4;
          bucket.push(new Date(t));
          outcome.push(o);
          n.push(Math.round(base * wave * spiky));
        }
      }
      // And to the organization's sums (migration 101), as the writer adds them.
      const org = tbl.replace('usage_', 'usage_org_');
      await c.query(
        `INSERT INTO ${tbl} (bucket, organization_id, key_id, outcome, count)
         SELECT b, 1, 1000, o, n FROM unnest($1::timestamptz[], $2::text[], $3::bigint[]) AS r(b, o, n)
         ON CONFLICT (key_id, outcome, bucket) DO UPDATE SET count = ${tbl}.count + EXCLUDED.count`,
        [bucket, outcome, n],
      );
      return c.query(
        `INSERT INTO ${org} (bucket, organization_id, outcome, count)
         SELECT b, 1, o, n FROM unnest($1::timestamptz[], $2::text[], $3::bigint[]) AS r(b, o, n)
         ON CONFLICT (organization_id, bucket, outcome) DO UPDATE SET count = ${org}.count + EXCLUDED.count`,
        [bucket, outcome, n],
      );
    };
    await rows('usage_hour', HOUR, 7 * 24);
    await rows('usage_day', DAY, 30);
  } finally {
    await c.end();
  }
}

async function startProgram() {
  database = `console_${process.pid}_${Date.now()}`;
  const c = admin();
  await c.connect();
  await c.query(`CREATE DATABASE ${database}`);
  await c.end();
  const u = new URL(process.env.DATABASE_URL!);
  u.pathname = `/${database}`;
  dbUrl = u.toString();
  const [port, adminPort, backendPort, apiPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: dbUrl,
    REDIS_URL: process.env.REDIS_URL,
    REDIS_KEY_PREFIX: `c${randomBytes(4).toString('hex')}:`,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    BACKEND_PORT: String(backendPort),
    ADMIN_API_PORT: String(apiPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // The history written within a moment and the webhooks polled often, so the pages see them soon.
    USAGE_FLUSH_MS: '200',
    WEBHOOKS_POLL_MS: '50',
  };
  child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'start'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  await untilReady(`http://127.0.0.1:${adminPort}/readyz`, child, () => out, 90_000);
  // The banner is printed right after readiness: the demo admin token, once.
  for (let i = 0; i < 100 && !/admin token \(write/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
  token = /admin token \(write, this start only\): (kga_[A-Za-z0-9]{40})/.exec(out)?.[1] ?? '';
  adminApi = `http://127.0.0.1:${apiPort}`;
  gateway = `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  if (!CAN) return;
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      received.push(id);
      failing ??= id;
      res.writeHead(id === failing ? 500 : 204).end();
    });
  });
  receiverUrl = `${(await listenLocal(receiver)).url}/hooks`;
  await startProgram();
  await seedHistory(Date.now());
  profile = mkdtempSync(join(tmpdir(), 'kg-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  // Works offline: nothing the console loads may come from another origin.
  page.on('request', (r) => {
    if (!r.url().startsWith(adminApi)) foreign.push(r.url());
  });
}, 180_000);

afterAll(async () => {
  await context?.close().catch(() => {});
  if (profile) rmSync(profile, { recursive: true, force: true });
  receiver?.close();
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  if (database) {
    const c = admin();
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await c.end();
  }
}, 60_000);

const viaGateway = (key: string) =>
  fetch(`${gateway}/v2/workspaces/100/accounts`, {
    headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': '203.0.113.20' },
  });

const number = (text: string | null) => Number((text ?? '').replace(/[^0-9]/g, ''));

/** The totals line of the history chart on the page: admitted and refused. */
async function chartTotals() {
  return {
    admitted: number(await page.getByTestId('admitted-total').textContent()),
    refused: number(await page.getByTestId('refused-total').textContent()),
  };
}

/** The API's totals for the period the chart's button `range` shows, asked as the page asks. */
async function apiTotals(path: string, range: '24h' | '7d' | '30d') {
  const step = range === '30d' ? DAY : HOUR;
  const buckets = range === '24h' ? 24 : range === '7d' ? 168 : 30;
  const now = Date.now();
  const from = new Date(Math.floor(now / step) * step - (buckets - 1) * step).toISOString();
  const q = new URLSearchParams({ from, to: new Date(now).toISOString(), granularity: step === DAY ? 'day' : 'hour' });
  const { body } = await apiGet(`${path}?${q}`);
  return { admitted: body.totals.admitted, refused: body.totals.refused };
}

describe.skipIf(!CAN)('the console in headless Chromium', () => {
  it('npm start printed a write admin token', () => {
    expect(token, out).toMatch(/^kga_/);
  });

  it('signs in with the keyboard and lands on the overview; search finds organizations and keys by name and hint', async () => {
    await page.goto(adminApi + '/');
    await page.getByLabel('Admin token').waitFor();
    await shot('sign-in');
    // A wrong token is refused in place.
    await page.getByLabel('Admin token').fill('kga_' + 'w'.repeat(40));
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/not valid/);
    // Keyboard only: the field, the token, Enter.
    await page.getByLabel('Admin token').focus();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.type(token);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await expect.poll(async () => number(await page.getByTestId('stat-organizations').textContent())).toBe(1);
    // Today's seeded traffic is in the overview's counts.
    await expect
      .poll(async () => number(await page.getByTestId('stat-admitted today').textContent()))
      .toBeGreaterThan(0);

    const search = page.getByRole('search');
    await search.getByLabel('Search organizations and keys').fill('acme');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByTestId('search-results').getByRole('link', { name: 'Acme Outreach' }).waitFor();
    // A key by the start of its secret (its hint).
    await search.getByLabel('Search organizations and keys').fill('svc_ws_DemoExpiringKey');
    await search.getByRole('button', { name: 'Search' }).click();
    await page
      .getByTestId('search-results')
      .getByRole('link', { name: /demo expiring key/ })
      .waitFor();
    await search.getByLabel('Search organizations and keys').fill('no such thing at all');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText(/Nothing matches/).waitFor();
  }, 60_000);

  it("shows an organization's history over 24 h, 7 d and 30 d with the API's totals, and changes its plan", async () => {
    await page.getByRole('link', { name: 'Organizations' }).click();
    await page.getByRole('link', { name: 'Acme Outreach' }).click();
    await page.getByRole('heading', { name: /Acme Outreach/ }).waitFor();
    const chart = page.getByTestId('history-chart');
    await chart.locator('canvas').first().waitFor();
    for (const range of ['24h', '7d', '30d'] as const) {
      await page.getByRole('group', { name: 'Period' }).getByRole('button', { name: range }).click();
      const want = await apiTotals('/api/organizations/1/usage/history', range);
      expect(want.admitted).toBeGreaterThan(0);
      expect(want.refused).toBeGreaterThan(0);
      await expect.poll(chartTotals).toEqual(want);
      if (range === '7d') await shot('organization');
    }
    // The legend names the outcomes, admitted and refused apart, with the refusal codes.
    await chart.getByText('forwarded, upstream 2xx').waitFor();
    await chart.getByText('refused: key rate limit').waitFor();
    await chart.getByText(/Refusal codes: .*unauthenticated/).waitFor();

    const plan = page.getByRole('form', { name: 'Change the plan' });
    await plan.getByLabel('Plan').selectOption('scale');
    await plan.getByRole('button', { name: 'Change plan' }).click();
    await page.getByRole('status').filter({ hasText: 'The plan is now scale' }).waitFor();
    expect((await apiGet('/api/organizations/1')).body.plan).toBe('scale');
  }, 60_000);

  it('creates a key with expiry, metadata and scopes picked from the route table, and shows its secret once', async () => {
    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Name').fill('console e2e');
    const expires = new Date(Date.now() + 3 * DAY);
    const field = expires.toISOString().slice(0, 16);
    // Typed in the console's one date format, UTC.
    await form.getByLabel('Expires (UTC; empty: never)').fill(field.replace('T', ' '));
    await form.getByLabel(/^Metadata/).fill('{"customer": "cus_42"}');
    await form.getByRole('checkbox', { name: /accounts:read/ }).check();
    await form.getByRole('checkbox', { name: /tags:read/ }).check();
    // An ADMIN key cannot take a scope whose least role is above it.
    expect(await form.getByRole('checkbox', { name: /workspace:provision/ }).isDisabled()).toBe(true);
    await shot('create-key');
    await form.getByRole('button', { name: 'Create key' }).click();
    const secretBox = page.getByTestId('secret');
    await secretBox.waitFor();
    secret = (await secretBox.textContent())!.trim();
    expect(secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
    await shot('key-created');
    // Shown once: dismissed, it is nowhere on the page, and the API never shows it again.
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByTestId('secret').waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);
    const keys = (await apiGet('/api/keys?organization=1&limit=200')).body.items;
    const k = keys.find((x: { name: string }) => x.name === 'console e2e');
    keyId = k.id;
    expect(k.scopes.sort()).toEqual(['accounts:read', 'tags:read']);
    expect(k.expiresAt).toBe(`${field}:00.000Z`);
    expect(k.metadata).toEqual({ customer: 'cus_42' });
  }, 60_000);

  it("shows the key's history, usage and limits move as it is used, and edits its name, expiry and metadata", async () => {
    for (let i = 0; i < 3; i++) expect((await viaGateway(secret)).status).toBe(200);
    await page.getByRole('link', { name: 'console e2e' }).click();
    await page.getByRole('heading', { name: /Key console e2e/ }).waitFor();
    await expect
      .poll(async () => Number(await page.getByTestId('used-read').textContent()), { timeout: 20_000 })
      .toBe(3);
    // The gateway's history of the key: the three requests, forwarded with a 2xx.
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByTestId('admitted-total').waitFor();
          return chartTotals();
        },
        { timeout: 20_000 },
      )
      .toEqual({ admitted: 3, refused: 0 });
    await page.getByTestId('history-chart').getByText('forwarded, upstream 2xx').waitFor();

    const edit = page.getByRole('form', { name: 'Edit the key' });
    // Metadata that is not an object is refused in place, before any request.
    await edit.getByLabel(/^Metadata/).fill('[1, 2]');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('alert').filter({ hasText: 'Metadata must be a JSON object' }).waitFor();
    await edit.getByLabel('Name').fill('console e2e renamed');
    const expires = new Date(Date.now() + 5 * DAY).toISOString().slice(0, 16);
    await edit.getByLabel('Expires (UTC; empty: never)').fill(expires.replace('T', ' '));
    await edit.getByLabel(/^Metadata/).fill('{"customer": "cus_43", "tier": "gold"}');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { name: /Key console e2e renamed/ }).waitFor();
    const k = (await apiGet(`/api/keys/${keyId}`)).body;
    expect(k).toMatchObject({ name: 'console e2e renamed', expiresAt: `${expires}:00.000Z` });
    expect(k.metadata).toEqual({ customer: 'cus_43', tier: 'gold' });
    // The one date format, UTC.
    await page
      .getByText(`${expires.replace('T', ' ')} UTC`)
      .first()
      .waitFor();

    // The key's limits editor, with the keyboard: a read budget of 2, Enter; the next request says so.
    const limits = page.getByRole('form', { name: 'Key limits' });
    await limits.getByLabel('Read per minute').focus();
    await page.keyboard.type('2');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved:' }).waitFor();
    expect((await viaGateway(secret)).headers.get('x-ratelimit-limit')).toBe('2');
    await shot('key');
  }, 60_000);

  it('revokes a key with a confirmation that takes the focus; the gateway refuses it and the audit trail has the row', async () => {
    const doomed = await apiSend('POST', '/api/keys', {
      type: 'workspace',
      name: 'to revoke',
      workspaceId: 100,
      role: 'VIEWER',
      scopes: ['accounts:read'],
    });
    expect(doomed.status).toBe(201);
    await page.goto(`${adminApi}/#/keys/${doomed.body.id}`);
    await page.getByRole('heading', { name: /Key to revoke/ }).waitFor();
    await page.getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Confirm revoke');
    await page.keyboard.press('Enter');
    await page.locator('.status-revoked', { hasText: 'revoked' }).first().waitFor();
    expect((await viaGateway(doomed.body.secret)).status).toBe(401);

    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByLabel('Action').fill('key.revoke');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.getByRole('row').filter({ hasText: 'key.revoke' });
    await row.first().waitFor({ timeout: 20_000 });
    expect(await row.first().textContent()).toMatch(/admin-token/);
    await shot('audit');
  }, 60_000);

  it('creates an admin token shown once, which works until it is revoked from the list', async () => {
    await page.getByRole('link', { name: 'Admin tokens' }).click();
    await page.getByRole('heading', { name: 'Admin tokens' }).waitFor();
    const form = page.getByRole('form', { name: 'Create an admin token' });
    await form.getByLabel('Name').fill('e2e reader');
    await form.getByLabel('Role').selectOption('read');
    await form.getByRole('button', { name: 'Create token' }).click();
    const made = (await page.getByTestId('secret').textContent())!.trim();
    expect(made).toMatch(/^kga_[A-Za-z0-9]{40}$/);
    expect((await apiGet('/api/me', made)).body).toMatchObject({ name: 'e2e reader', role: 'read' });
    await page.getByRole('button', { name: 'I have saved it' }).click();
    const row = page.getByRole('row').filter({ hasText: 'e2e reader' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm revoke e2e reader' }).click();
    await page.getByRole('checkbox', { name: 'Show revoked tokens' }).check();
    await page.getByRole('row').filter({ hasText: 'e2e reader' }).locator('.status-revoked').waitFor();
    expect((await apiGet('/api/me', made)).status).toBe(401);
    expect(await page.content()).not.toContain(made);
    await shot('admin-tokens');
  }, 60_000);

  it('adds a webhook endpoint (secret once), shows its failing deliveries, disables and enables it, and replays a delivery', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    const form = page.getByRole('form', { name: 'Add a webhook endpoint' });
    await form.getByLabel('URL').fill(receiverUrl);
    await form.getByLabel('Description (optional)').fill('e2e receiver');
    // The event types come from the admin API's own description.
    await form.getByRole('checkbox', { name: 'key.created' }).check();
    await form.getByRole('button', { name: 'Add endpoint' }).click();
    expect((await page.getByTestId('secret').textContent())!.trim()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('link', { name: receiverUrl }).click();
    await page.getByRole('heading', { name: /Endpoint/ }).waitFor();

    // The receiver fails the first event (500): its delivery shows the answer and waits for a retry;
    // the second is delivered.
    const make = (name: string) =>
      apiSend('POST', '/api/keys', { type: 'workspace', name, workspaceId: 100, role: 'VIEWER', scopes: [] });
    await make('webhook one');
    await expect.poll(() => received.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
    await make('webhook two');
    const rows = page.getByRole('row');
    await rows.filter({ hasText: 'HTTP 500' }).first().waitFor({ timeout: 20_000 });
    await rows.filter({ hasText: 'delivered' }).first().waitFor({ timeout: 20_000 });
    await shot('webhook');

    // A delivered one, replayed by hand: a new delivery of the same event (same webhook-id).
    const endpoint = /#\/webhooks\/(\d+)/.exec(page.url())![1];
    const delivered = (await apiGet(`/api/webhooks/${endpoint}/deliveries?status=delivered`)).body.items[0];
    const sent = () => received.filter((id) => id === delivered.messageId).length;
    expect(sent()).toBe(1);
    await rows.filter({ hasText: delivered.messageId }).getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('status').filter({ hasText: 'queued again' }).waitFor();
    await expect.poll(sent, { timeout: 20_000 }).toBe(2);

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.locator('.status-disabled').first().waitFor();
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.locator('.status-enabled').first().waitFor();
    await page.getByRole('link', { name: '← Webhooks' }).click();
    await page.getByRole('row').filter({ hasText: receiverUrl }).waitFor();
    await shot('webhooks');
  }, 60_000);

  it('shows the overview with a quota at its end, refusals today and a key expiring soon', async () => {
    // A monthly quota of 4 for the organization: past its fourth request this month, the demo key's
    // requests are refused by it.
    expect((await apiSend('PATCH', '/api/organizations/1/limits', { monthlyQuota: 4 })).status).toBe(200);
    const demo = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await viaGateway(demo)).status);
    expect(statuses).toContain(429);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    // Refreshed until the gateway's history has the refusals (it writes them within USAGE_FLUSH_MS).
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByTestId('stat-refused today').waitFor();
          return page.getByRole('table', { name: 'Refusals today' }).textContent();
        },
        { timeout: 20_000 },
      )
      .toMatch(/limited_month/);
    const quotas = page.getByRole('table', { name: 'Monthly quotas at 80 % or more' });
    await quotas.getByRole('row').filter({ hasText: 'Acme Outreach' }).filter({ hasText: '100 %' }).waitFor();
    const expiring = page.getByRole('table', { name: 'Keys expiring within 7 days' });
    await expiring.getByRole('link', { name: 'console e2e renamed' }).waitFor();
    await shot('overview');
    expect(foreign).toEqual([]);
  }, 60_000);

  it('says what failed in the page when the API refuses or does not answer', async () => {
    await page.goto(`${adminApi}/#/keys/2147483000`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/no key|not found/i);
    await page.route('**/api/overview', (r) =>
      r.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({
          error: { code: 'service_unavailable', message: 'a store did not answer; try again', requestId: 'x' },
        }),
      }),
    );
    await page.goto(`${adminApi}/#/`);
    await page
      .getByRole('alert')
      .filter({ hasText: 'The overview could not be read: a store did not answer' })
      .waitFor();
    // The rest of the page still works: the search and the menu.
    await page.getByRole('search').waitFor();
    await shot('error');
    await page.unroute('**/api/overview');
    await page.goto(`${adminApi}/#/organizations`);
  }, 60_000);

  it('reads on a phone width without sideways scrolling, each page showing its status', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    const noOverflow = async () =>
      expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(
        1,
      );
    await page.goto(`${adminApi}/#/`);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByTestId('stat-refused today').waitFor();
    await page.getByRole('table', { name: 'Keys expiring within 7 days' }).getByText('console e2e renamed').waitFor();
    await noOverflow();
    await shot('phone-overview');
    await page.goto(`${adminApi}/#/keys/${keyId}`);
    await page.getByRole('heading', { name: /console e2e renamed/ }).waitFor();
    // The key's status is on the first screen.
    await expect.poll(() => page.locator('.facts .status-active').isVisible()).toBe(true);
    const box = await page.locator('.facts .status-active').boundingBox();
    expect(box!.y + box!.height).toBeLessThan(844);
    await page.getByTestId('history-chart').locator('canvas').first().waitFor();
    await noOverflow();
    await shot('phone-key');
    await page.goto(`${adminApi}/#/organizations/1`);
    await page.getByRole('heading', { name: /Acme Outreach/ }).waitFor();
    await page.getByRole('row').filter({ hasText: 'console e2e renamed' }).locator('.status-active').waitFor();
    await noOverflow();
    await shot('phone-organization');
    await page.goto(`${adminApi}/#/webhooks`);
    await page.getByRole('row').filter({ hasText: receiverUrl }).locator('.status-enabled').waitFor();
    await noOverflow();
  }, 60_000);
});

it.runIf(!CAN)('is skipped without PostgreSQL, Redis and Chromium', () => {
  expect(
    spawnSync(CHROMIUM, ['--version']).status === 0 && process.env.DATABASE_URL && process.env.REDIS_URL,
  ).toBeFalsy();
});
