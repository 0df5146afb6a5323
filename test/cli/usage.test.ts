// `keygate usage key|org|export` as an operator runs them: arguments refused on one line with exit code
// 2 before any database is opened; over a database holding history rows, a key's and an organization's
// reading as a table or JSON (the service layer's answer), refusals of the service with their exit code,
// and the billing export to stdout or to a file (whole, or no file at all), in process and as the real
// program.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { EXPORT_COLUMNS } from '../../src/access/service/usage-history.js';
import { openTestDb } from '../helpers/db.js';
import { runCli } from '../helpers/cli-program.js';
import { baseSeed } from '../fixtures/seed.js';
import { ensureUsageTables, insertAnswers } from '../access/usage-history-rows.js';
import { bareEnv, keygateInProcess } from './in-process.js';

describe('arguments: one line naming the command and the option, exit code 2, before any database is opened', () => {
  const env = bareEnv({ DATA_DIR: '/proc/keygate-never' });
  const cases: [string[], RegExp][] = [
    [['usage', 'key'], /^keygate: usage key: missing <keyId>$/],
    [['usage', 'key', '0'], /^keygate: usage key: <keyId> must be a positive integer id/],
    [
      ['usage', 'org', '1', '--granularity', 'week'],
      /^keygate: usage org: --granularity must be one of minute, hour, day/,
    ],
    [['usage', 'key', '1', '--from', 'yesterday'], /^keygate: usage key: --from must be an ISO 8601 time with a zone/],
    [['usage', 'key', '1', '--to', '2026-11-22T10:00'], /^keygate: usage key: --to must be an ISO 8601 time/],
    [['usage', 'export'], /^keygate: usage export: --month is required$/],
    [['usage', 'export', '--month', '2026-13'], /^keygate: usage export: --month must be YYYY-MM, e.g. 2026-11/],
    [
      ['usage', 'export', '--month', '2026-11', '--format', 'xml'],
      /^keygate: usage export: --format must be one of csv, jsonl/,
    ],
    [
      ['usage', 'export', '--month', '2026-11', '--organization', 'x'],
      /^keygate: usage export: --organization must be/,
    ],
    [
      ['usage', 'export', '--month', '2026-11', '--json'],
      /^keygate: usage export: takes --format jsonl rather than --json$/,
    ],
    [['usage', 'frob'], /^keygate: usage: expected key, org or export \(got "frob"\)$/],
  ];
  it.each(cases)('keygate %j', async (args, line) => {
    const r = await keygateInProcess(args, env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd()).toMatch(line);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

// The commands read a database: a schema of the test's own on the PostgreSQL server (a PGlite DATA_DIR
// cannot be opened by the test and the command at once).
describe.skipIf(!process.env.DATABASE_URL)('over a database (needs DATABASE_URL)', () => {
  let db: Awaited<ReturnType<typeof openTestDb>>;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  const hour = (t: number) => Math.floor(t / 3_600_000) * 3_600_000;
  const now = Date.now();

  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(baseSeed()));
    await ensureUsageTables(db);
    await insertAnswers(db, [
      { at: '2026-11-10T10:15:00Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 7 },
      { at: '2026-11-10T11:15:00Z', org: 1, key: 1000, outcome: 'refused_150003', count: 2 },
      { at: '2026-11-10T11:20:00Z', org: 1, key: 1001, outcome: 'limited_key', count: 1 },
      { at: '2026-11-12T00:00:00Z', org: 2, key: 2000, outcome: 'answered', count: 3 },
      // This hour: the default reading's last bucket.
      { at: new Date(now).toISOString(), org: 1, key: 1000, outcome: 'forwarded_4xx', count: 5 },
    ]);
    await db.query(`UPDATE api_keys SET name = $1 WHERE id = 1000`, ['ws, "admin"']);
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('options', `-c search_path=${db.schema}`);
    env = bareEnv({ DATABASE_URL: url.toString() });
    dir = mkdtempSync(join(tmpdir(), 'kg-usage-cli-'));
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a key by hour as a table: what it covers, its totals, a row per bucket with the outcomes that occurred', async () => {
    const r = await keygateInProcess(
      ['usage', 'key', '1000', '--from', '2026-11-10T10:00:00Z', '--to', '2026-11-10T12:00:00Z'],
      env,
    );
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toBe(
      [
        'Key 1000 (organization 1), by hour from 2026-11-10T10:00:00.000Z to 2026-11-10T12:00:00.000Z (UTC): 7 admitted, 2 refused.',
        'start (UTC)       admitted  refused  forwarded_2xx  refused_150003',
        '2026-11-10 10:00  7         0        7              0',
        '2026-11-10 11:00  0         2        0              2',
        '',
      ].join('\n'),
    );
  });

  it("the default: the last 24 hours by hour, this hour last; --json is the service layer's answer", async () => {
    const r = await keygateInProcess(['usage', 'key', '1000', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const h = JSON.parse(r.stdout);
    expect(h).toMatchObject({ keyId: 1000, organizationId: 1, granularity: 'hour', totals: { admitted: 5 } });
    expect(h.buckets).toHaveLength(24);
    expect(h.buckets[23]).toMatchObject({ start: new Date(hour(now)).toISOString(), admitted: 5 });
  });

  it('an organization by day over a span before now, and its refusals with their exit codes', async () => {
    const r = await keygateInProcess(
      ['usage', 'org', '1', '--from', '2026-11-09', '--to', '2026-11-11', '--granularity', 'day'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n').slice(1, 4)).toEqual([
      'start (UTC)  admitted  refused  forwarded_2xx  limited_key  refused_150003',
      '2026-11-09   0         0        0              0            0',
      '2026-11-10   7         3        7              1            2',
    ]);
    const missing = await keygateInProcess(['usage', 'org', '999999'], env);
    expect([missing.code, missing.stderr]).toEqual([1, 'keygate: usage org: no organization 999999\n']);
    const tooMany = await keygateInProcess(['usage', 'key', '1000', '--granularity', 'minute', '--from', '-3d'], env);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toMatch(/^keygate: usage key: a history by minute holds at most 1440 buckets/);
  });

  it('the export: CSV on stdout, names quoted; JSON lines of one organization to a file', async () => {
    const csv = await keygateInProcess(['usage', 'export', '--month', '2026-11'], env);
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.split('\r\n');
    expect(lines[0]).toBe(EXPORT_COLUMNS.join(','));
    expect(lines[1]).toBe('2026-11,1,Acme,1000,"ws, ""admin""",svc_ws_WsAd…,7,2,7,0,0,0,0,0,0,0,0,2,0');
    expect(lines.slice(2)).toEqual([
      '2026-11,1,Acme,1001,ws viewer,svc_ws_WsVi…,0,1,0,0,0,0,0,1,0,0,0,0,0',
      '2026-11,2,Beta,2000,beta ws,svc_ws_Org2…,3,0,0,0,0,0,3,0,0,0,0,0,0',
      '',
    ]);
    const file = join(dir, 'beta.jsonl');
    const r = await keygateInProcess(
      ['usage', 'export', '--month', '2026-11', '--organization', '2', '--format', 'jsonl', '--out', file],
      env,
    );
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', '']);
    expect(
      readFileSync(file, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([expect.objectContaining({ organization_id: 2, key_id: 2000, admitted: 3, answered: 3 })]);
    // An organization not there: refused before any file is made.
    const none = join(dir, 'none.csv');
    const missing = await keygateInProcess(
      ['usage', 'export', '--month', '2026-11', '--organization', '999999', '--out', none],
      env,
    );
    expect([missing.code, missing.stderr]).toEqual([1, 'keygate: usage export: no organization 999999\n']);
    expect(existsSync(none)).toBe(false);
    expect(readdirSync(dir)).toEqual(['beta.jsonl']);
  });

  it('the program: keygate usage export --out writes the same bytes as stdout', async () => {
    const file = join(dir, 'all.csv');
    const r = await runCli(['usage', 'export', '--month', '2026-11', '--out', file], env);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const same = await keygateInProcess(['usage', 'export', '--month', '2026-11'], env);
    expect(readFileSync(file, 'utf8')).toBe(same.stdout);
  }, 120_000);
});
