// The seed under a profile (docs/profiles.md): its keys are of the profile's key types, with their
// prefixes, and belong to a consumer (an organization without workspaces); without a profile the
// workspace API's three stay the only ones. The hint is the key type's prefix and four characters.
// examples/shop/seed.json is applied under examples/shop/profile.yaml as `keygate start` applies SEED_FILE.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { applyStartSeed, startSeedFile } from '../../src/app/seed.js';
import { loadProfile } from '../../src/config/profile/load.js';
import { getPepper } from '../../src/access/pepper.js';
import { hashSecret, hintOf } from '../../src/access/secrets.js';
import { resolvePrincipal } from '../../src/access/principal.js';
import { createLogger } from '../../src/ops/logger.js';
import type { Db } from '../../src/db/index.js';

const files = { ROUTES_FILE: 'config/routes.json', PLANS_FILE: 'config/plans.json' };
const profile = loadProfile({ ...files, PROFILE_FILE: 'test/fixtures/profiles/g-rest.yaml' });
const shop = loadProfile({ ...files, PROFILE_FILE: 'examples/shop/profile.yaml' });

const CONSUMER = 'gshop_' + 'Consumer'.padEnd(40, '0');
const BACKOFFICE = 'gbolive' + 'Backoffice'.padEnd(40, '1');
const WORKSPACE_KEY = 'svc_ws_' + 'Workspace'.padEnd(40, '2');

function seed(keys: Record<string, unknown>[] = []) {
  return {
    organizations: [{ id: 1, name: 'Globex', plan: 'free' }],
    apiKeys: [
      { id: 1, secret: CONSUMER, name: 'storefront', organizationId: 1, scopes: ['orders:read'] },
      { id: 2, secret: BACKOFFICE, name: 'back office', organizationId: 1, scopes: ['orders:read', 'orders:write'] },
      ...keys,
    ],
  };
}

describe('parsing a seed under a profile', () => {
  it("takes the profile's key types, and only them", () => {
    expect(parseSeed(seed(), 'seed', profile).apiKeys.map((k) => k.name)).toEqual(['storefront', 'back office']);
    const ws = { id: 3, secret: WORKSPACE_KEY, name: 'ws', workspaceId: 1 };
    expect(() => parseSeed(seed([ws]), 'seed', profile)).toThrowError(
      /^seed apiKeys\.2\.secret: must be gshop_ or gbolive plus 32 to 128 characters of \[A-Za-z0-9\]$/,
    );
  });

  it("without a profile, the workspace API's types: a consumer key is refused in its words", () => {
    expect(() => parseSeed(seed(), 'shop.json')).toThrowError(
      /^shop\.json apiKeys\.0\.secret: must be svc_ws_, svc_pk_ or svc_v1_ plus 32 to 128 characters of \[A-Za-z0-9\]$/,
    );
  });

  it('refuses a consumer key without its organization, or bound to a workspace or user', () => {
    const bad = seed();
    delete (bad.apiKeys[0] as Record<string, unknown>).organizationId;
    expect(() => parseSeed(bad, 'seed', profile)).toThrowError(
      'seed apiKeys.0.organizationId: a gshop_ key needs organizationId and no workspaceId or userId',
    );
    const bound = seed();
    (bound.apiKeys[1] as Record<string, unknown>).userId = 7;
    expect(() => parseSeed(bound, 'seed', profile)).toThrowError(
      'seed apiKeys.1.organizationId: a gbolive key needs organizationId and no workspaceId or userId',
    );
  });

  it('refuses a secret of a prefix with too short a random part', () => {
    const short = seed();
    short.apiKeys[0].secret = 'gshop_' + 'a'.repeat(31);
    expect(() => parseSeed(short, 'seed', profile)).toThrowError(/^seed apiKeys\.0\.secret: must be gshop_ or/);
  });
});

describe('the hint', () => {
  it("is the key type's prefix and four characters; the workspace API's stay their first 11", () => {
    expect(hintOf(CONSUMER, 'gshop_')).toBe('gshop_Cons…');
    expect(hintOf(BACKOFFICE, 'gbolive')).toBe('gboliveBack…');
    expect(hintOf(CONSUMER)).toBe('gshop_Cons…');
    for (const prefix of ['svc_ws_', undefined]) expect(hintOf(WORKSPACE_KEY, prefix)).toBe('svc_ws_Work…');
    expect(hintOf('svc_pk_' + 'x'.repeat(40))).toBe('svc_pk_xxxx…');
  });
});

describe('applying a seed under a profile', () => {
  let db: Db & { drop(): Promise<void> };
  beforeAll(async () => {
    db = await openTestDb();
  });
  afterAll(async () => db?.drop());

  const keyRows = () =>
    db.query(
      `SELECT id, organization_id, type, hint, key_hash, workspace_id, user_id, role, scopes FROM api_keys ORDER BY id`,
    );

  it('writes each key of its type, resolvable by that type, and again with the same result', async () => {
    const parsed = parseSeed(seed(), 'seed', profile);
    expect(await applySeed(db, parsed, 'seed', profile)).toEqual([1]);
    await applySeed(db, parsed, 'seed', profile);
    const pepper = await getPepper(db);
    const rows = await keyRows();
    expect(rows.map((r) => [r.id, r.type, r.organization_id, r.hint, r.workspace_id, r.user_id, r.role])).toEqual([
      [1, 'consumer', 1, 'gshop_Cons…', null, null, null],
      [2, 'backoffice', 1, 'gboliveBack…', null, null, null],
    ]);
    expect(rows[0].key_hash).toBe(hashSecret(pepper, CONSUMER));
    const p = await resolvePrincipal(db, hashSecret(pepper, BACKOFFICE), 'backoffice');
    expect(p).toMatchObject({ keyId: 2, organizationId: 1, plan: 'free', workspaceId: null });
    expect([...p!.scopes]).toEqual(['orders:read', 'orders:write']);
    // The type is the one its prefix names: the other type's lookup does not take it.
    expect(await resolvePrincipal(db, hashSecret(pepper, BACKOFFICE), 'consumer')).toBeNull();
  });

  it('a seed applied under a profile that lacks its key types changes nothing', async () => {
    const parsed = parseSeed(
      { organizations: [{ id: 2, name: 'Initech', plan: 'free' }], apiKeys: [seed().apiKeys[0]] },
      'seed',
      profile,
    );
    parsed.apiKeys[0].id = 3;
    await expect(applySeed(db, parsed)).rejects.toThrowError(/^seed apiKeys\.0\.secret: must be svc_ws_, /);
    expect(await db.query(`SELECT id FROM organizations WHERE id = 2`)).toEqual([]);
  });
});

describe('examples/shop/seed.json under examples/shop/profile.yaml', () => {
  let db: Db & { drop(): Promise<void> };
  beforeAll(async () => {
    db = await openTestDb();
  });
  afterAll(async () => db?.drop());

  it('is the SEED_FILE `keygate start` applies: one consumer on free, a reader key and a writer key', async () => {
    const file = startSeedFile({ SEED_FILE: 'examples/shop/seed.json' }, 'start', shop, 'config/demo-seed.json');
    expect(file).toBe('examples/shop/seed.json');
    const bumped: number[] = [];
    const versions = { get: async () => 0, bump: async (org: number) => bumped.push(org) };
    const raw = JSON.parse(readFileSync(file!, 'utf8'));
    await applyStartSeed(db, { versions }, raw, createLogger('silent'), shop);
    expect(bumped).toEqual([1]);
    expect(await db.query(`SELECT id, name, plan FROM organizations`)).toEqual([{ id: 1, name: 'Acme', plan: 'free' }]);
    expect(await db.query(`SELECT count(*)::int AS n FROM workspaces`)).toEqual([{ n: 0 }]);
    const pepper = await getPepper(db);
    const scopes = [];
    for (const k of raw.apiKeys as { secret: string }[]) {
      expect(k.secret).toMatch(/^shop_[A-Za-z0-9]{40}$/);
      const p = await resolvePrincipal(db, hashSecret(pepper, k.secret), 'consumer');
      expect(p).toMatchObject({ organizationId: 1, plan: 'free' });
      scopes.push([...p!.scopes].sort());
    }
    expect(scopes).toEqual([
      ['catalog:read', 'orders:read'],
      ['catalog:read', 'orders:read', 'orders:write'],
    ]);
    // Without the profile, the workspace API's types: its keys are refused, as before.
    await expect(applyStartSeed(db, { versions }, raw, createLogger('silent'))).rejects.toThrowError(
      /^seed apiKeys\.0\.secret: must be svc_ws_/,
    );
  });
});
