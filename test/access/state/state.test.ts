// The declarative state (src/access/state/, docs/declarative-state.md) in process: the document's
// schema and mistakes, export → apply on a fresh database → the same export byte for byte, diff empty
// and a second apply a no-op, every change audited as the apply through the service layer, prune's
// semantics, a file with mistakes changing nothing, and two applies racing on two connections.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { FakeClock } from '../../helpers/stack.js';
import { baseSeed, ALL_SCOPES } from '../../fixtures/seed.js';
import { applySeed, parseSeed } from '../../../src/backend/seed.js';
import { getPepper } from '../../../src/access/pepper.js';
import { hashSecret } from '../../../src/access/secrets.js';
import { loadPlans } from '../../../src/config/plans.js';
import { openDb } from '../../../src/db/index.js';
import { serviceContext, type ServiceBase, type ServiceContext } from '../../../src/access/service/context.js';
import { createAdminToken } from '../../../src/access/service/admin-tokens.js';
import { createKey } from '../../../src/access/service/keys.js';
import { createEndpoint } from '../../../src/access/events/endpoints.js';
import { applyState, diffState, exportState, StateMistakes } from '../../../src/access/state/apply.js';
import { parseState, serializeState } from '../../../src/access/state/document.js';
import { stateJsonSchema, type StateDocument } from '../../../src/access/state/schema.js';
import type { Db } from '../../../src/db/types.js';

type TestDb = Db & { drop(): Promise<void> };
const plans = loadPlans('config/plans.json');
const clock = new FakeClock(Date.UTC(2026, 11, 1));
const bumps: number[] = [];

async function baseOf(db: Db): Promise<ServiceBase> {
  return {
    db,
    clock,
    pepper: await getPepper(db),
    plans: () => plans,
    scopes: () => Object.fromEntries(ALL_SCOPES.map((s) => [s, 'VIEWER' as const])),
    accessChanged: async (org) => void bumps.push(org),
  };
}
const operator = async (db: Db): Promise<ServiceContext> =>
  serviceContext(await baseOf(db), { kind: 'cli', osUser: 'ci', name: 'apply state.yaml' });

async function text(db: Db): Promise<string> {
  const { doc, mistakes } = await exportState(await operator(db));
  expect(mistakes).toEqual([]);
  return serializeState(doc, 'yaml');
}
const docOf = (yaml: string): StateDocument => {
  const p = parseState(yaml);
  if (!p.ok) throw new Error(p.mistakes.join('\n'));
  return p.doc;
};
const clone = <T>(v: T): T => structuredClone(v);
async function mistakesOf(p: Promise<unknown>): Promise<string[]> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateMistakes);
  return (err as StateMistakes).mistakes;
}
const auditCount = async (db: Db) => Number((await db.query(`SELECT count(*)::int AS n FROM audit_events`))[0].n);

describe('the document', () => {
  it('docs/state.schema.json is the JSON Schema generated from the zod schema', () => {
    // Regenerate: npx tsx -e "import('./src/access/state/schema.ts').then(m => process.stdout.write(m.stateJsonSchema()))" > docs/state.schema.json
    expect(readFileSync('docs/state.schema.json', 'utf8')).toBe(stateJsonSchema());
  });

  it('names every mistake by its path in the file', () => {
    const p = parseState(
      [
        'version: 1',
        'organizations:',
        '  - name: Acme',
        '    colour: blue',
        '    keys:',
        '      - name: ci',
        '        type: robot',
        '        scopes: [accounts:read, 7]',
        '        limits: { read: 0 }',
      ].join('\n'),
    );
    expect(p.ok).toBe(false);
    expect(!p.ok && p.mistakes.sort()).toEqual(
      [
        'organizations[0].colour: unknown field',
        'organizations[0].keys[0].type: must be one of workspace, personal, partner',
        'organizations[0].keys[0].scopes[1]: must be a string',
        'organizations[0].keys[0].limits.read: must be at least 1',
      ].sort(),
    );
    const yaml = parseState('version: 1\norganizations: [\n');
    expect(yaml.ok).toBe(false);
    expect(!yaml.ok && yaml.mistakes[0]).toMatch(/^line \d+, column \d+: /);
  });
});

describe('export, diff and apply', () => {
  let source: TestDb;
  let fresh: TestDb;
  let exported: string;

  beforeAll(async () => {
    [source, fresh] = [await openTestDb(), await openTestDb()];
    await applySeed(source, parseSeed(baseSeed()));
    const ctx = serviceContext(await baseOf(source), { kind: 'cli', osUser: 'setup' });
    await createAdminToken(ctx, { name: 'ci', role: 'write' });
    await createEndpoint(ctx, {
      url: 'https://hooks.example.test/keygate',
      eventTypes: ['key.revoked', 'key.created'],
    });
    exported = await text(source);
  }, 120_000);
  afterAll(async () => {
    await source?.drop();
    await fresh?.drop();
  });

  it('export then apply on a fresh database gives the same export back, byte for byte; then no diff, no change', async () => {
    expect(exported).toMatch(/^version: 1\nplans:\n/);
    expect(exported).not.toMatch(/svc_|kga_|whsec_|hint|hash/);
    const doc = docOf(exported);
    expect(doc.organizations!.map((o) => o.name)).toEqual(['Acme', 'Beta', 'Gamma']);

    const first = await applyState(await operator(fresh), doc, { prune: false });
    expect(first.changes.length).toBeGreaterThan(10);
    // One secret per key, admin token and endpoint made: printed once, never in the export.
    expect(first.printed.map((p) => p.what)).toContain('admin token "ci"');
    expect(await text(fresh)).toBe(exported);

    expect((await diffState(await operator(fresh), doc, { prune: true })).changes).toEqual([]);
    const before = await auditCount(fresh);
    const second = await applyState(await operator(fresh), doc, { prune: false });
    expect(second.changes).toEqual([]);
    expect(await auditCount(fresh)).toBe(before);
  });

  it('refuses a file with mistakes whole: nothing changes, each mistake names its field', async () => {
    const doc = docOf(exported);
    const acme = doc.organizations![0];
    acme.keys![0].scopes = ['accounts:read', 'acounts:read'];
    acme.keys!.push({ name: 'new', type: 'workspace', workspace: 'Nowhere' });
    acme.keys!.push({ name: 'new', type: 'partner' });
    doc.organizations![1].plan = 'platinum';
    doc.plans!.growth.read = 9999;
    const wsAdmin = acme.keys!.findIndex((k) => k.name === 'ws admin');
    acme.keys![wsAdmin].role = 'VIEWER';
    const adding = clone(doc);
    adding.organizations!.push({
      name: 'Delta',
      keys: [{ name: 'vaulted', type: 'partner', secretFrom: 'DELTA_KEY' }],
    });

    const before = await text(fresh);
    const audit = await auditCount(fresh);
    const mistakes = await mistakesOf(applyState(await operator(fresh), adding, { prune: true, env: {} }));
    const n = acme.keys!.length;
    expect(mistakes).toEqual(
      expect.arrayContaining([
        'plans.growth.read: 9999, PLANS_FILE has 20; plans live in PLANS_FILE',
        'organizations[0].keys[0].scopes[1]: unknown scope "acounts:read"',
        `organizations[0].keys[${n - 2}].workspace: no workspace "Nowhere" in this organization's workspaces`,
        `organizations[0].keys[${n - 1}].name: duplicate of organizations[0].keys[${n - 2}].name`,
        `organizations[0].keys[${wsAdmin}].role: a key's role cannot change ("ADMIN" in the database, "VIEWER" here); give the key a new name to replace it`,
        'organizations[1].plan: unknown plan "platinum" (not in PLANS_FILE)',
        'organizations[3].keys[0].secretFrom: the environment has no DELTA_KEY',
      ]),
    );
    // Delta, right but for its secret, is not created: the file is refused whole.
    expect(await text(fresh)).toBe(before);
    expect(await auditCount(fresh)).toBe(audit);
    // diff reports the same mistakes, but for the secrets: CI's diff runs without them.
    expect(await mistakesOf(diffState(await operator(fresh), adding, { prune: false }))).toEqual(
      mistakes.filter((m) => !m.includes('secretFrom')),
    );
  });

  it('changes fields through the service layer, audited as the apply with one request id, bumping each organization', async () => {
    const doc = docOf(await text(fresh));
    const acme = doc.organizations![0];
    acme.plan = 'scale';
    acme.limits = { read: 7, monthlyQuota: 'none' };
    acme.users!.find((u) => u.email === 'viewer@acme.test')!.role = 'OWNER';
    acme.workspaces!.find((w) => w.name === 'Main')!.members!.find((m) => m.email === 'viewer@acme.test')!.role =
      'EDITOR';
    acme.workspaces!.push({ name: 'Third', members: [{ email: 'editor@acme.test', role: 'ADMIN' }] });
    const pk = acme.keys!.find((k) => k.name === 'owner pk')!;
    pk.expiresAt = '2027-06-30T12:00:00+02:00';
    pk.metadata = { tier: 'gold', customer: { id: 7 } };
    pk.limits = { write: 3 };
    const secret = 'svc_ws_' + 'FromTheVault'.padEnd(40, '0');
    acme.keys!.push({ name: 'vault', type: 'workspace', workspace: 'Third', role: 'EDITOR', secretFrom: 'VAULT_KEY' });
    doc.webhooks![0].enabled = false;

    const diff = await diffState(await operator(fresh), doc, { prune: false });
    expect(diff.changes.map((c) => `${c.kind} ${c.what}`)).toEqual([
      'update organization "Acme"',
      'update user "viewer@acme.test" of organization "Acme"',
      'update member "viewer@acme.test" of workspace "Main" of organization "Acme"',
      'create workspace "Third" of organization "Acme"',
      'create member "editor@acme.test" of workspace "Third" of organization "Acme"',
      'update key "owner pk" of organization "Acme"',
      'create key "vault" of organization "Acme"',
      'update webhook "https://hooks.example.test/keygate"',
    ]);
    expect(diff.changes[0].fields).toEqual([
      { field: 'plan', from: 'growth', to: 'scale' },
      { field: 'limits', from: undefined, to: { read: 7, monthlyQuota: 'none' } },
    ]);

    bumps.length = 0;
    const r = await applyState(await operator(fresh), doc, { prune: false, env: { VAULT_KEY: secret } });
    expect(r.printed).toEqual([]); // the one new key's secret came from the environment
    const rows = await fresh.query(
      `SELECT actor_kind, actor_id, actor_name, action FROM audit_events WHERE request_id = $1 ORDER BY id`,
      [r.requestId],
    );
    expect(
      rows.every((x) => x.actor_kind === 'cli' && x.actor_id === 'ci' && x.actor_name === 'apply state.yaml'),
    ).toBe(true);
    expect(rows.map((x) => x.action)).toEqual([
      'organization.plan',
      'organization.limits',
      'user.update',
      'membership.update',
      'workspace.create',
      'membership.create',
      'key.update',
      'key.limits',
      'key.create',
      'webhook.update',
    ]);
    expect(new Set(bumps)).toEqual(new Set([1]));
    const vault = await fresh.query(`SELECT key_hash, role FROM api_keys WHERE name = 'vault'`);
    expect(vault).toEqual([{ key_hash: hashSecret(await getPepper(fresh), secret), role: 'EDITOR' }]);

    expect((await diffState(await operator(fresh), doc, { prune: false })).changes).toEqual([]);
    const again = docOf(await text(fresh)).organizations![0].keys!.find((k) => k.name === 'owner pk');
    expect(again).toMatchObject({
      expiresAt: '2027-06-30T10:00:00.000Z',
      metadata: { customer: { id: 7 }, tier: 'gold' },
    });
  });

  it('keeps what the file lacks unless --prune, which revokes keys and tokens and deletes memberships, workspaces and endpoints', async () => {
    const doc = docOf(await text(fresh));
    const acme = doc.organizations![0];
    // The user viewer@acme.test leaves the file with their key and memberships; "vault" and "Third" go.
    const viewer = (email: string) => email === 'viewer@acme.test';
    acme.keys = acme.keys!.filter((k) => k.name !== 'vault' && k.name !== 'viewer pk');
    acme.workspaces = acme.workspaces!.filter((w) => w.name !== 'Third');
    for (const w of acme.workspaces) w.members = w.members!.filter((m) => !viewer(m.email));
    acme.users = acme.users!.filter((u) => !viewer(u.email));
    doc.organizations = doc.organizations!.filter((o) => o.name !== 'Gamma');
    doc.adminTokens = [];
    doc.webhooks = [];

    const kept = await diffState(await operator(fresh), doc, { prune: false });
    expect(kept.changes).toEqual([]);
    expect(kept.kept).toEqual(
      expect.arrayContaining([
        'organization "Gamma" (organizations are never deleted)',
        'key "vault" of organization "Acme" (--prune would revoke it)',
        'workspace "Third" of organization "Acme" (--prune would delete it)',
        'admin token "ci" (--prune would revoke it)',
      ]),
    );

    const r = await applyState(await operator(fresh), doc, { prune: true });
    expect(r.changes.filter((c) => c.kind === 'create' || c.kind === 'update')).toEqual([]);
    const keys = await fresh.query(`SELECT name, revoked_at FROM api_keys WHERE organization_id = 1 ORDER BY id`);
    expect(
      keys
        .filter((k) => k.revoked_at === null)
        .map((k) => k.name)
        .sort(),
    ).toEqual(acme.keys.map((k) => k.name).sort());
    expect(await fresh.query(`SELECT deleted_at FROM workspaces WHERE name = 'Third'`)).toEqual([
      { deleted_at: expect.any(Date) },
    ]);
    expect(await fresh.query(`SELECT revoked_at FROM admin_tokens WHERE revoked_at IS NULL`)).toEqual([]);
    expect(await fresh.query(`SELECT id FROM webhook_endpoints`)).toEqual([]);
    // Users stay (their sessions, their history); Gamma stays.
    expect(
      await fresh.query(`SELECT email FROM users WHERE email IN ('viewer@acme.test', 'owner@gamma.test')`),
    ).toHaveLength(2);
    expect((await diffState(await operator(fresh), doc, { prune: true })).changes).toEqual([]);
  });

  // Two connections need a server: PGlite is one connection in one process.
  it.runIf(Boolean(process.env.DATABASE_URL))(
    'two applies racing on two connections leave one state: the second plans against the first',
    async () => {
      const other = await openDb({ databaseUrl: process.env.DATABASE_URL, schema: fresh.schema });
      try {
        const doc = docOf(await text(fresh));
        doc.organizations!.push({
          name: 'Raced',
          plan: 'growth',
          users: [{ email: 'a@raced.test', role: 'OWNER' }],
          workspaces: [{ name: 'W', members: [{ email: 'a@raced.test', role: 'ADMIN' }] }],
          keys: [
            { name: 'one', type: 'workspace', workspace: 'W' },
            { name: 'two', type: 'partner' },
          ],
        });
        const results = await Promise.all([
          applyState(await operator(fresh), doc, { prune: false }),
          applyState(await operator(other), doc, { prune: false }),
        ]);
        expect(results.map((r) => r.changes.length).sort()).toEqual([0, 6]);
        const orgs = await fresh.query(`SELECT id FROM organizations WHERE name = 'Raced'`);
        expect(orgs).toHaveLength(1);
        expect(
          await fresh.query(`SELECT name FROM api_keys WHERE organization_id = $1 ORDER BY name`, [orgs[0].id]),
        ).toEqual([{ name: 'one' }, { name: 'two' }]);
      } finally {
        await other.close();
      }
    },
  );
  it('export warns of what apply would refuse in the database itself: two live keys of one name', async () => {
    const ctx = await operator(fresh);
    for (let i = 0; i < 2; i++) await createKey(ctx, { type: 'partner', organizationId: 2, name: 'twin' });
    const { doc, mistakes } = await exportState(ctx);
    const keys = doc.organizations!.find((o) => o.name === 'Beta')!.keys!;
    const [a, b] = keys.flatMap((k, i) => (k.name === 'twin' ? [i] : []));
    expect(mistakes).toEqual([
      `organizations[1].keys[${b}].name: duplicate of organizations[1].keys[${a}].name`,
      `organizations[1].keys[${a}].name: 2 live keys so named in the database; rename all but one first`,
      `organizations[1].keys[${b}].name: 2 live keys so named in the database; rename all but one first`,
    ]);
  });
});
