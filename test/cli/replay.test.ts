// `keygate limits replay` on a log the real gateway recorded: the same traffic replayed against
// candidate plans and overrides, reported per organization and key beside what was refused for real.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createLogger, flushAccessLines } from '../../src/ops/logger.js';
import { loadSettings } from '../../src/config/settings.js';
import { runAdminCommand } from '../../src/cli/program.js';
import type { ReplayReport } from '../../src/cli/replay.js';
import { testSecret } from '../helpers/keys.js';

// The CLI reaches the test's schema through PGOPTIONS, on the real PostgreSQL only.
describe.runIf(Boolean(process.env.DATABASE_URL))('limits replay', () => {
  let s: Stack;
  let recorded = '';
  const dir = mkdtempSync(join(tmpdir(), 'kg-replay-'));
  const logFile = join(dir, 'access.log');
  const plans = JSON.parse(readFileSync('config/plans.json', 'utf8'));

  beforeAll(async () => {
    // The access log's time is the wall clock's; the recorded minute must hold the whole burst, as
    // the gateway's own windows do (a burst that straddled a minute would be split alike, but the
    // expected counts below assume one window).
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
    s = await startStack({ log: createLogger('info', { write: (line: string) => void (recorded += line) }) });
    // Traffic of organization 1 (Growth: 20 reads per key per minute): 3 reads of the editor's key,
    // then 25 of the workspace admin key (the last 5 refused for real), an unkeyed refusal and a
    // rate-limit report (neither spends anything).
    for (let i = 0; i < 3; i++)
      expect((await s.request('GET', '/v2/workspaces/100/tags', { key: K.editorPk, ip: '10.50.0.1' })).status).toBe(
        200,
      );
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++)
      statuses.push((await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.50.0.2' })).status);
    expect(statuses.filter((x) => x === 429)).toHaveLength(5);
    expect(
      (
        await s.request('GET', '/v2/workspaces/100/tags', {
          key: testSecret('svc_ws_', 'Nobody'),
          ip: '10.50.0.3',
        })
      ).status,
    ).toBe(401);
    expect((await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.50.0.2' })).status).toBe(
      200,
    );
    flushAccessLines();
    writeFileSync(logFile, recorded);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  async function replay(
    candidate: unknown,
    overrides?: unknown,
  ): Promise<{ code: number; report: ReplayReport; stderr: string }> {
    const plansFile = join(dir, `plans-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(plansFile, JSON.stringify(candidate));
    const args = ['limits', 'replay', '--access-log', logFile, '--plans', plansFile, '--json'];
    if (overrides !== undefined) {
      const file = join(dir, `overrides-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(overrides));
      args.push('--overrides', file);
    }
    let stdout = '';
    let stderr = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
    const env = { PATH: process.env.PATH, DATABASE_URL: process.env.DATABASE_URL! };
    // In process, pg reads libpq's PGOPTIONS from the process's environment: the test's own schema.
    const savedOptions = process.env.PGOPTIONS;
    process.env.PGOPTIONS = `-c search_path=${s.db.schema}`;
    try {
      await runAdminCommand(loadSettings(env, 'migrate'), args);
      return { code: 0, report: JSON.parse(stdout), stderr };
    } catch (err) {
      stderr = (err as Error).message;
      return { code: 1, report: null as unknown as ReplayReport, stderr };
    } finally {
      out.mockRestore();
      if (savedOptions === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = savedOptions;
    }
  }
  const row = (r: ReplayReport, keyId: number | null) =>
    r.rows.find((x) => x.organizationId === 1 && x.keyId === keyId)!;

  it('a lower budget: how many would have been refused, when, beside the real refusals', async () => {
    const { code, report } = await replay({ ...plans, growth: { ...plans.growth, read: 10 } });
    expect(code).toBe(0);
    expect(report.lines).toBe(29); // 28 spent + the report (keyed); the unkeyed 401 is skipped
    expect(report.skipped).toBeGreaterThanOrEqual(1);
    const admin = row(report, 1000);
    expect(admin).toMatchObject({
      plan: 'growth',
      requests: 25,
      refusedReal: 5,
      refusedPerMinute: 15,
      refusedMonthly: 0,
      admittedNow: 0,
    });
    expect(admin.firstRefusal).not.toBeNull();
    expect(admin.minutes.length).toBeGreaterThanOrEqual(1);
    expect(row(report, 1011)).toMatchObject({ requests: 3, refusedReal: 0, refusedPerMinute: 0 });
    expect(row(report, null)).toMatchObject({ requests: 28, refusedReal: 5, refusedPerMinute: 15 });
  });

  it('a higher budget admits what was refused for real', async () => {
    const { report } = await replay({ ...plans, growth: { ...plans.growth, read: 30 } });
    expect(row(report, 1000)).toMatchObject({
      requests: 25,
      refusedReal: 5,
      refusedPerMinute: 0,
      admittedNow: 5,
      firstRefusal: null,
    });
  });

  it('a monthly quota refuses what comes after it is spent, for the whole organization', async () => {
    const { report } = await replay({ ...plans, growth: { ...plans.growth, read: 30, monthlyQuota: 12 } });
    // The editor's 3 come first, then 9 of the admin key's; the other 16 would be refused.
    expect(row(report, 1011)).toMatchObject({ refusedMonthly: 0 });
    expect(row(report, 1000)).toMatchObject({ refusedPerMinute: 0, refusedMonthly: 16, admittedNow: 0 });
    expect(row(report, null)).toMatchObject({ requests: 28, refusedMonthly: 16 });
  });

  it('--overrides: a key override on top of the candidate plans', async () => {
    const { report } = await replay(
      { ...plans, growth: { ...plans.growth, read: 10 } },
      { keys: { '1000': { read: 22 } } },
    );
    expect(row(report, 1000)).toMatchObject({ refusedPerMinute: 3, admittedNow: 2 });
    expect(row(report, 1011)).toMatchObject({ refusedPerMinute: 0 });
  });

  it('a bad candidate file is refused naming it', async () => {
    const { code, stderr } = await replay({ ...plans, growth: { ...plans.growth, read: -1 } });
    expect(code).toBe(1);
    expect(stderr).toMatch(/growth\.read/);
    const bad = await replay(plans, { organizations: { one: { read: 5 } } });
    expect(bad.stderr).toMatch(/organizations\.one/);
  });
});
