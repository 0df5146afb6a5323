// The audit trail is tamper-evident (docs/service-layer.md, The audit trail): whoever edits, deletes or
// inserts rows behind the triggers' back, as the role owning the table or as a superuser
// (scripts/audit-tamper.ts), `keygate audit verify` (the real CLI) exits 1 naming the first row that
// does not follow; an intact trail, and one the retention purge shortened, verify with exit 0. The purge
// keeps what the retention recorded by the migrating owner keeps, whatever retention its caller asks
// for, and a row inserted with the triggers on carries the database's time and role, not the writer's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { transform } from 'esbuild';
import pg from 'pg';
import { ageAuditTrail, openRoleSchema, type RoleSchema } from '../helpers/db.js';
import { runCli } from '../helpers/cli-program.js';
import { openDb, migrate, type Db, type Queryable } from '../../src/db/index.js';
import { purgeAudit, recordAudit, verifyAudit } from '../../src/access/service/audit.js';
import type { Actor } from '../../src/access/service/context.js';

// scripts/audit-tamper.ts with its types stripped once for the file, as tsx would on each of its dozen
// runs (tsx's start is most of a run's CPU); its packages are the repository's.
let tamperDir = '';
async function tamperScript(): Promise<string> {
  if (!tamperDir) {
    tamperDir = mkdtempSync(join(tmpdir(), 'kg-audit-tamper-'));
    symlinkSync(resolvePath('node_modules'), join(tamperDir, 'node_modules'), 'dir');
    const { code } = await transform(readFileSync('scripts/audit-tamper.ts', 'utf8'), { loader: 'ts', format: 'esm' });
    writeFileSync(join(tamperDir, 'audit-tamper.mjs'), code);
  }
  return join(tamperDir, 'audit-tamper.mjs');
}
afterAll(() => {
  if (tamperDir) rmSync(tamperDir, { recursive: true, force: true });
});

async function tamper(url: string, which: string, superuser = false): Promise<{ row: number; at?: string }> {
  const args = [await tamperScript(), which, ...(superuser ? ['--superuser'] : [])];
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { env: { ...process.env, DATABASE_URL: url } }, (err, stdout, stderr) =>
      err ? reject(new Error(`audit-tamper ${which}: ${stderr}`)) : resolve(JSON.parse(stdout)),
    ),
  );
}

function cliEnv(url: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url, ...extra };
  delete env.REDIS_URL;
  return env;
}

const verify = (url: string) => runCli(['audit', 'verify'], cliEnv(url));

async function query(url: string, sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(sql, params)).rows;
  } finally {
    await c.end();
  }
}

const cli: Actor = { kind: 'cli', osUser: 'tester' };
async function writeTrail(db: Queryable, n: number): Promise<void> {
  for (let i = 0; i < n; i++)
    await recordAudit(
      db,
      { actor: cli },
      {
        action: 'organization.pause',
        targetType: 'organization',
        targetIds: [1],
        organizationId: 1,
        before: { paused: i % 2 === 1, n: i },
        after: { paused: i % 2 === 0, n: i },
      },
    );
}

// Roles and a schema of the test's own on a real PostgreSQL (PGlite has a single user and no second role).
describe.skipIf(!process.env.DATABASE_URL)('the audit trail is tamper-evident', () => {
  let s: RoleSchema;
  let db: Db;
  let emptyChain: unknown;

  // The schema is migrated once for the file (by its owner, the costliest step of a test): each test
  // starts from an empty trail again, the rows removed and the chain's row put back as the migrations
  // left it, behind the triggers (as a superuser), then 5 rows written through them. The tamper cases
  // check that this trail verifies before they edit it.
  beforeAll(async () => {
    s = await openRoleSchema(process.env.DATABASE_URL!);
    db = await openDb({ databaseUrl: s.ownerUrl });
    await migrate(db);
    [{ chain: emptyChain }] = await query(s.superUrl, `SELECT to_jsonb(c) AS chain FROM audit_chain c`);
  }, 60_000);
  beforeEach(async () => {
    const c = new pg.Client({ connectionString: s.superUrl });
    await c.connect();
    try {
      await c.query('BEGIN');
      await c.query('SET LOCAL session_replication_role = replica');
      await c.query('DELETE FROM audit_events');
      await c.query('DELETE FROM audit_chain');
      await c.query('INSERT INTO audit_chain SELECT * FROM jsonb_populate_record(NULL::audit_chain, $1)', [emptyChain]);
      await c.query('COMMIT');
    } finally {
      await c.end();
    }
    await writeTrail(db, 5);
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    await s?.drop();
  });

  const cases: [string, boolean][] = [
    ['edit', false],
    ['delete', false],
    ['delete-oldest', false],
    ['delete-newest', false],
    ['insert', false],
    ['edit', true],
    ['delete', true],
    ['insert', true],
  ];
  it.each(cases)('catches %s (superuser: %s) naming the first row that does not follow', async (which, su) => {
    // The trail is intact before: the check the CLI runs, in process (the CLI's exit 0 on an intact
    // trail is the tests below).
    expect(await verifyAudit({ db })).toMatchObject({ ok: true, rows: 5 });
    const { row } = await tamper(su ? s.superUrl : s.ownerUrl, which, su);
    const r = await verify(s.ownerUrl);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout + r.stderr).toMatch(new RegExp(`\\brow ${row}\\b`));
  });

  it('stamps a row inserted with the triggers on with the database time and role, and chains it', async () => {
    const { row, at } = await tamper(s.ownerUrl, 'insert-triggered');
    expect(Date.now() - Date.parse(at!)).toBeLessThan(86_400_000);
    const [stamped] = await query(s.superUrl, `SELECT db_user FROM audit_events WHERE id = $1`, [row]);
    expect(stamped.db_user).toBe(s.owner);
    const r = await verify(s.ownerUrl);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('keeps one chain under concurrent writers', async () => {
    // Each transaction draws its default id before it waits for the chain's lock, then writes in the
    // order the lock grants: without the id drawn again under the lock, id order and chain order differ.
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        db.tx(async (q) => {
          await q.query(`SELECT pg_sleep(0.005 * $1)`, [i % 4]);
          await writeTrail(q, 1);
          // The chain's lock is held to the commit: the others draw their ids meanwhile.
          await q.query(`SELECT pg_sleep(0.01)`);
        }),
      ),
    );
    expect(await verifyAudit({ db })).toMatchObject({ ok: true, rows: 25 });
  });

  it('purges only past the retention the owner recorded, and the shortened trail still verifies', async () => {
    const migrateAs = async (days: number) => {
      const r = await runCli(['migrate'], cliEnv(s.ownerUrl, { AUDIT_RETENTION_DAYS: String(days) }));
      expect(r.code, r.stderr).toBe(0);
    };
    await migrateAs(365);
    await ageAuditTrail({ query: async (sql: string) => query(s.superUrl, sql) }, 3, 40);
    // A caller asking for one day keeps the 365 the owner recorded: nothing is 365 days old.
    expect(await purgeAudit({ db }, 1)).toBe(0);
    await migrateAs(30);
    expect(await purgeAudit({ db }, 1)).toBe(3);
    expect(await db.query(`SELECT id FROM audit_events`)).toHaveLength(2);
    const r = await verify(s.ownerUrl);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // The purge's checkpoint still tells a removed oldest row from a purged one.
    await writeTrail(db, 2);
    const { row } = await tamper(s.ownerUrl, 'delete-oldest');
    const broken = await verify(s.ownerUrl);
    expect(broken.code).toBe(1);
    expect(broken.stdout + broken.stderr).toMatch(new RegExp(`\\brow ${row}\\b`));
  });
});
