// The seed loader: strict, one transaction, idempotent; on both drivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { baseSeed } from '../fixtures/seed.js';
import { readFileSync } from 'node:fs';
import type { Db } from '../../src/db/index.js';

const drivers = [['pglite', true]] as [string, boolean][];
if (process.env.DATABASE_URL) drivers.push(['pg', false]);

describe.each(drivers)('seed on %s', (_name, forcePglite) => {
  let db: Db & { drop(): Promise<void> };
  beforeAll(async () => {
    db = await openTestDb({ forcePglite });
  });
  afterAll(async () => db?.drop());

  const count = async (t: string) => (await db.query(`SELECT count(*)::int AS n FROM ${t}`))[0].n;

  it('applies the demo seed and the test seed, twice, with the same result', async () => {
    const demo = parseSeed(JSON.parse(readFileSync('config/demo-seed.json', 'utf8')));
    await applySeed(db, parseSeed(baseSeed()));
    const before = {
      keys: await count('api_keys'),
      accounts: await count('accounts'),
      msgs: await count('warmup_messages'),
    };
    await applySeed(db, parseSeed(baseSeed()));
    expect({
      keys: await count('api_keys'),
      accounts: await count('accounts'),
      msgs: await count('warmup_messages'),
    }).toEqual(before);
    expect(demo.apiKeys.length).toBeGreaterThan(0);
  });

  it('stores only keyed hashes of secrets and session tokens', async () => {
    const seed = baseSeed();
    const dump =
      JSON.stringify(await db.query(`SELECT * FROM api_keys`)) +
      JSON.stringify(await db.query(`SELECT * FROM sessions`));
    for (const k of seed.apiKeys) expect(dump).not.toContain(k.secret.slice(7));
    for (const t of seed.sessions) expect(dump).not.toContain(t.token);
  });

  it('new rows get ids past the seeded ones', async () => {
    const r = await db.query(`INSERT INTO organizations (name) VALUES ('new') RETURNING id`);
    expect(r[0].id).toBeGreaterThan(3);
  });

  it.each([
    [(s: any) => (s.organizations[0].colour = 'red'), /seed organizations\.0\.colour: unknown field/],
    [(s: any) => (s.apiKeys[0].secret = 'svc_ws_short'), /seed apiKeys\.0\.secret: /],
    [(s: any) => (s.users[0].orgRole = 'KING'), /seed users\.0\.orgRole: /],
    [(s: any) => (s.extra = []), /seed extra: unknown field/],
    [(s: any) => delete s.apiKeys[0].workspaceId, /seed apiKeys\.0\.workspaceId: /],
  ])('a bad seed names the field (%#)', (mutate, msg) => {
    const s = baseSeed();
    mutate(s);
    expect(() => parseSeed(s)).toThrowError(msg);
  });

  it('a seed that fails half-way changes nothing', async () => {
    const before = await db.query(`SELECT name FROM organizations WHERE id = 1`);
    const s = baseSeed();
    s.organizations[0].name = 'Renamed';
    s.memberships.push({ workspaceId: 100, userId: 20, role: 'VIEWER' }); // user of another organization
    await expect(applySeed(db, parseSeed(s))).rejects.toThrowError(/seed memberships\.6: /);
    expect(await db.query(`SELECT name FROM organizations WHERE id = 1`)).toEqual(before);
    const s2 = baseSeed();
    s2.organizations[0].name = 'Renamed';
    s2.apiKeys[0].workspaceId = 999;
    await expect(applySeed(db, parseSeed(s2))).rejects.toThrowError(/seed apiKeys\.0\.workspaceId: no workspace 999/);
    expect(await db.query(`SELECT name FROM organizations WHERE id = 1`)).toEqual(before);
  });

  it.each([
    [(s: any) => (s.accounts[0].workspaceId = 999), /seed accounts\.0[.:]/],
    [(s: any) => (s.tags[0].workspaceId = 999), /seed tags\.0[.:]/],
  ])("a backend domain's refused row is named too (%#)", async (mutate, msg) => {
    const s = baseSeed();
    mutate(s);
    await expect(applySeed(db, parseSeed(s))).rejects.toThrowError(msg);
  });

  it('the access triggers notify on every access change', async () => {
    const got: string[] = [];
    let done!: () => void;
    const both = new Promise<void>((r) => (done = r));
    const unlisten = await db.listen(`keygate_access_${db.schema}`, (p) => {
      got.push(p);
      if (got.length === 2) done();
    });
    await db.query(`UPDATE organizations SET paused = paused WHERE id = 2`);
    await db.query(`UPDATE memberships SET role = role WHERE workspace_id = 100 AND user_id = 12`);
    await both; // the notifications arrive asynchronously; the test timeout bounds the wait
    await unlisten();
    expect(got).toEqual(['2', '1']);
  });
});
