// The console end to end in a real browser: headless Chromium (Debian's package) driven by
// playwright-core against the real program (`keygate start` with ADMIN_API_PORT, PostgreSQL and Redis):
// sign in with the admin token the start printed, create a key and read its secret once, use the key
// through the gateway and see its usage (the month's quota too) and the organization's chart move, lower
// its read budget in the limits editor and see the next request's header follow, revoke it and see the next
// request refused and the audit row appear. Screenshots of each page go to test-results/console/.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { untilReady } from '../helpers/program.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Needs a PostgreSQL server to create a database on, a Redis and Chromium (CI installs Debian's
// chromium package when it is absent); elsewhere the file is skipped.
const CAN = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL) && existsSync(CHROMIUM);
const SHOTS = join('test-results', 'console');

let child: ChildProcess | null = null;
let out = '';
let database = '';
let profile = '';
let context: BrowserContext;
let page: Page;
let adminApi = '';
let gateway = '';
let token = '';
const foreign: string[] = [];
const admin = () => new pg.Client({ connectionString: process.env.DATABASE_URL });

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!CAN) return;
  mkdirSync(SHOTS, { recursive: true });
  database = `console_${process.pid}_${Date.now()}`;
  const c = admin();
  await c.connect();
  await c.query(`CREATE DATABASE ${database}`);
  await c.end();
  const dbUrl = new URL(process.env.DATABASE_URL!);
  dbUrl.pathname = `/${database}`;
  const [port, adminPort, backendPort, apiPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: dbUrl.toString(),
    REDIS_URL: process.env.REDIS_URL,
    REDIS_KEY_PREFIX: `c${randomBytes(4).toString('hex')}:`,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    BACKEND_PORT: String(backendPort),
    ADMIN_API_PORT: String(apiPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
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

const viaGateway = (secret: string) =>
  fetch(`${gateway}/v2/workspaces/100/accounts`, {
    headers: { authorization: `Bearer ${secret}`, 'x-forwarded-for': '203.0.113.20' },
  });

describe.skipIf(!CAN)('the console in headless Chromium', () => {
  it('npm start printed a write admin token', () => {
    expect(token, out).toMatch(/^kga_/);
  });

  it('signs in with the keyboard, creates a key, shows the secret once, shows usage move, revokes, and shows the audit row', async () => {
    await page.goto(adminApi + '/');
    await page.getByLabel('Admin token').waitFor();
    await shot('1-sign-in');
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
    await page.getByRole('heading', { name: 'Organizations' }).waitFor();
    await page.getByRole('link', { name: 'Acme Outreach' }).waitFor();
    await shot('2-organizations');

    await page.getByRole('link', { name: 'Acme Outreach' }).click();
    await page.getByRole('heading', { name: /Acme Outreach/ }).waitFor();
    const form = page.getByRole('form', { name: 'Create a key' });
    await form.getByLabel('Name').fill('console e2e');
    await form.getByLabel('Scopes (comma-separated)').fill('accounts:read');
    await form.getByRole('button', { name: 'Create key' }).click();
    const secretBox = page.getByTestId('secret');
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!.trim();
    expect(secret).toMatch(/^svc_ws_[A-Za-z0-9]{40}$/);
    await shot('3-key-created');
    // Shown once: dismissed, it is nowhere on the page, and the API never shows it again.
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByTestId('secret').waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(secret);

    // The key works at the gateway; its usage and the organization's chart move.
    for (let i = 0; i < 3; i++) expect((await viaGateway(secret)).status).toBe(200);
    await page.reload();
    await page.getByText(/accepted \(\d+\)/).waitFor();
    await expect
      .poll(
        async () =>
          Number(/accepted \((\d+)\)/.exec((await page.getByText(/accepted \(\d+\)/).textContent()) ?? '')?.[1]),
        { timeout: 20_000 },
      )
      .toBeGreaterThanOrEqual(3);
    await shot('4-organization');

    await page.getByRole('link', { name: 'console e2e' }).click();
    await page.getByRole('heading', { name: /Key console e2e/ }).waitFor();
    await expect
      .poll(async () => Number(await page.getByTestId('used-read').textContent()), { timeout: 20_000 })
      .toBe(3);
    expect(await page.content()).not.toContain(secret);
    // The demo organization has a monthly quota: the month's meter counts the organization's requests.
    await expect
      .poll(async () => Number(await page.getByTestId('used-month').textContent()), { timeout: 20_000 })
      .toBeGreaterThanOrEqual(3);
    await shot('5-key-usage');

    // The key's limits editor, with the keyboard: a read budget of 2, Enter; the next request says so.
    const limits = page.getByRole('form', { name: 'Key limits' });
    await limits.getByLabel('Read per minute').focus();
    await page.keyboard.type('2');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    expect((await viaGateway(secret)).headers.get('x-ratelimit-limit')).toBe('2');
    await shot('5b-key-limits');

    await page.getByRole('button', { name: 'Revoke' }).click();
    // The confirmation takes the focus: Enter confirms.
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Confirm revoke');
    await page.keyboard.press('Enter');
    await page.locator('.status-revoked', { hasText: 'revoked' }).first().waitFor();
    expect((await viaGateway(secret)).status).toBe(401);
    await shot('6-key-revoked');

    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByLabel('Action').fill('key.revoke');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.getByRole('row').filter({ hasText: 'key.revoke' });
    await row.first().waitFor({ timeout: 20_000 });
    expect(await row.first().textContent()).toMatch(/admin-token/);
    await shot('7-audit');

    expect(foreign).toEqual([]);
  }, 120_000);

  it('reads on a phone width without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(adminApi + '/#/organizations/1');
    await page.getByRole('heading', { name: /Acme Outreach/ }).waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await shot('8-phone-organization');
  }, 60_000);
});

it.runIf(!CAN)('is skipped without PostgreSQL, Redis and Chromium', () => {
  expect(
    spawnSync(CHROMIUM, ['--version']).status === 0 && process.env.DATABASE_URL && process.env.REDIS_URL,
  ).toBeFalsy();
});
