// The declarative state under a rest profile (docs/declarative-state.md, "Under a profile"): keys of the
// profile's key types read, applied as the consumer's (the organization's alone), exported back the same,
// and a key type the profile lacks refused naming the profile's types, when the file is read and when
// a document read under another profile is planned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { FakeClock } from '../../helpers/stack.js';
import { loadProfile } from '../../../src/config/profile/load.js';
import { getPepper } from '../../../src/access/pepper.js';
import { hashSecret } from '../../../src/access/secrets.js';
import { serviceContext, type ServiceContext } from '../../../src/access/service/context.js';
import { applyState, diffState, exportState } from '../../../src/access/state/apply.js';
import { parseState, serializeState } from '../../../src/access/state/document.js';
import type { StateDocument } from '../../../src/access/state/schema.js';
import type { Profile } from '../../../src/config/profile/types.js';
import type { Db } from '../../../src/db/types.js';

const profile = loadProfile({
  PROFILE_FILE: 'test/fixtures/profiles/g-rest.yaml',
  ROUTES_FILE: 'config/routes.json',
  PLANS_FILE: 'config/plans.json',
});
const clock = new FakeClock(Date.UTC(2026, 11, 1));
const BACKOFFICE = 'gbolive' + 'FromTheVault'.padEnd(40, '7');

async function operator(db: Db, p: Profile = profile): Promise<ServiceContext> {
  return serviceContext(
    {
      db,
      clock,
      pepper: await getPepper(db),
      plans: () => p.plans,
      scopes: () => p.routes.scopes,
      profile: () => p,
      accessChanged: async () => {},
    },
    { kind: 'cli', osUser: 'ci', name: 'apply state.yaml' },
  );
}

const FILE = [
  'version: 1',
  'organizations:',
  '  - name: Globex',
  '    plan: free',
  '    keys:',
  '      - name: storefront',
  '        type: consumer',
  '        scopes: [orders:read, catalog:read]',
  '      - name: back office',
  '        type: backoffice',
  '        scopes: [orders:write]',
  '        limits: { write: 5 }',
  '        secretFrom: G_BACKOFFICE_KEY',
].join('\n');

function docOf(text: string): StateDocument {
  const p = parseState(text, profile);
  if (!p.ok) throw new Error(p.mistakes.join('\n'));
  return p.doc;
}

describe('reading a file under a profile', () => {
  it("takes the profile's key types and refuses another, naming them", () => {
    expect(docOf(FILE).organizations![0].keys!.map((k) => k.type)).toEqual(['consumer', 'backoffice']);
    const p = parseState(FILE.replace('type: backoffice', 'type: workspace'), profile);
    expect(!p.ok && p.mistakes).toEqual(['organizations[0].keys[1].type: must be one of consumer, backoffice']);
    // Without a profile, the workspace API's three.
    const w = parseState(FILE);
    expect(!w.ok && w.mistakes).toEqual([
      'organizations[0].keys[0].type: must be one of workspace, personal, partner',
      'organizations[0].keys[1].type: must be one of workspace, personal, partner',
    ]);
  });
});

describe('export, diff and apply under a rest profile', () => {
  let db: Db & { drop(): Promise<void> };
  beforeAll(async () => {
    db = await openTestDb();
  }, 120_000);
  afterAll(async () => db?.drop());

  it("refuses a key the profile's types do not fit, changing nothing", async () => {
    const ctx = await operator(db);
    // Read under the workspace API's types, planned under the rest profile's: the plan names them.
    const personal = parseState(
      ['version: 1', 'organizations:', '  - name: Globex', '    keys:', '      - { name: me, type: personal }'].join(
        '\n',
      ),
    );
    if (!personal.ok) throw new Error(personal.mistakes.join('\n'));
    await expect(diffState(ctx, personal.doc, { prune: false })).rejects.toMatchObject({
      mistakes: [
        'organizations[0].keys[0].type: no key type "personal" in profile gshop; its key types are consumer, backoffice',
      ],
    });
    const bound = docOf(
      FILE.replace('type: consumer', 'type: consumer\n        workspace: Main\n        user: a@b.test'),
    );
    await expect(applyState(ctx, bound, { prune: false, env: {} })).rejects.toMatchObject({
      mistakes: [
        'organizations[0].keys[0].workspace: a consumer key takes no workspace',
        'organizations[0].keys[0].user: a consumer key takes no user',
        'organizations[0].keys[1].secretFrom: the environment has no G_BACKOFFICE_KEY',
      ],
    });
    // A secret of the profile's other type is not this key's.
    const env = { G_BACKOFFICE_KEY: 'gshop_' + 'x'.repeat(40) };
    await expect(applyState(ctx, docOf(FILE), { prune: false, env })).rejects.toMatchObject({
      mistakes: ["organizations[0].keys[1].secretFrom: G_BACKOFFICE_KEY does not hold a backoffice key's secret"],
    });
    expect(await db.query(`SELECT id FROM organizations`)).toEqual([]);
  });

  it("applies the consumer's keys of the profile's types, exports them back, then has nothing to change", async () => {
    const ctx = await operator(db);
    const r = await applyState(ctx, docOf(FILE), { prune: false, env: { G_BACKOFFICE_KEY: BACKOFFICE } });
    expect(r.changes.map((c) => `${c.kind} ${c.what}`)).toEqual([
      'create organization "Globex"',
      'create key "storefront" of organization "Globex"',
      'create key "back office" of organization "Globex"',
    ]);
    // The made secret is printed once, with the type's prefix; the one from the environment is not.
    expect(r.printed.map((p) => p.what)).toEqual(['key "storefront" of organization "Globex"']);
    expect(r.printed[0].secret).toMatch(/^gshop_[A-Za-z0-9]{40}$/);

    const rows = await db.query(
      `SELECT k.name, k.type, k.hint, k.key_hash, k.workspace_id, k.user_id, k.role, k.scopes, k.limit_write, o.name AS org
         FROM api_keys k JOIN organizations o ON o.id = k.organization_id ORDER BY k.id`,
    );
    expect(rows.map((k) => [k.name, k.type, k.org, k.workspace_id, k.user_id, k.role, [...k.scopes].sort()])).toEqual([
      ['storefront', 'consumer', 'Globex', null, null, null, ['catalog:read', 'orders:read']],
      ['back office', 'backoffice', 'Globex', null, null, null, ['orders:write']],
    ]);
    expect(rows[0].hint).toBe(`${r.printed[0].secret.slice(0, 10)}…`);
    expect(rows[1].hint).toBe('gboliveFrom…');
    expect(rows[1].key_hash).toBe(hashSecret(await getPepper(db), BACKOFFICE));
    expect(rows[1].limit_write).toBe(5);

    const { doc, mistakes } = await exportState(ctx);
    expect(mistakes).toEqual([]);
    const text = serializeState(doc, 'yaml');
    expect(text).not.toMatch(/gshop_|gbolive|hint/);
    const keys = doc.organizations![0].keys!;
    expect(keys.map((k) => [k.name, k.type, k.scopes])).toEqual([
      ['back office', 'backoffice', ['orders:write']],
      ['storefront', 'consumer', ['catalog:read', 'orders:read']],
    ]);
    // The export reads back under the profile, and nothing differs from the database.
    expect((await diffState(ctx, docOf(text), { prune: true })).changes).toEqual([]);
    expect((await diffState(ctx, docOf(FILE), { prune: true })).changes).toEqual([]);
  });
});
