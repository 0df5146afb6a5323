// Credentials at rest, through the real stack: SMTP/IMAP passwords and OAuth access tokens are
// stored sealed (AES-256-GCM under CREDENTIAL_KEYS, the key id beside each value), never returned,
// never logged; a dump of the database shows none; rotation keeps old values readable and reseals
// them at start; an altered value is detected and reported, not served as a 500; a database written
// before the sealing migration is sealed at the first start.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { openTestDb } from '../helpers/db.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { ALL_SCOPES, seedWith } from '../fixtures/seed.js';
import { createLogger } from '../../src/ops/logger.js';
import { openDb, migrate, type Db } from '../../src/db/index.js';
import { jobsOf } from '../../src/backend/jobs.js';
import { accountCredentials, resealCredentials } from '../../src/backend/credentials/accounts.js';
import { CredentialError } from '../../src/backend/credentials/cipher.js';
import { listenLocal } from '../helpers/listen.js';

const clock = new FakeClock();
const hex = () => randomBytes(6).toString('hex');
const KEY = {
  k1: randomBytes(32).toString('base64'),
  k2: randomBytes(32).toString('base64'),
  k3: randomBytes(32).toString('base64'),
};
const ring = (...ids: (keyof typeof KEY)[]) => ids.map((id) => `${id}:${KEY[id]}`).join(',');

const SECRET = {
  smtp: `smtp-Pw-${hex()}`,
  imap: `imap-Pw-${hex()}`,
  v1smtp: `v1-smtp-Pw-${hex()}`,
  v1imap: `v1-imap-Pw-${hex()}`,
  token: `ya29.first-${hex()}`,
  refreshed: `ya29.refreshed-${hex()}`,
  legacySmtp: `legacy-smtp-${hex()}`,
  legacyImap: `legacy-imap-${hex()}`,
  legacyToken: `legacy-token-${hex()}`,
};

const WS7 = 'svc_ws_' + 'CryptOrg7Ws00000000000000000000000001';
const V17 = 'svc_v1_' + 'CryptOrg7Partner000000000000000000001';

// Every line the program logs during this file.
const lines: string[] = [];
// One entry per line: the access log hands its lines over in batches (src/ops/logger.ts).
const log = createLogger('trace', { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) });

// A fake Google profile service (token -> mailbox) and a partner callback that hands out a fresh token.
const profiles = new Map<string, string>();
const profileServer = http.createServer((req, res) => {
  const email = profiles.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
  res.writeHead(email ? 200 : 401, { 'content-type': 'application/json' });
  res.end(JSON.stringify(email ? { emailAddress: email } : { error: 'invalid_token' }));
});
const callbackServer = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ accessToken: SECRET.refreshed, expiresAt: new Date(clock.now() + 86_400_000).toISOString() }),
    );
  });
});
const listen = async (srv: http.Server) => (await listenLocal(srv)).url;

let db: Db & { drop(): Promise<void> };
let dns: DnsServer;
let profileUrl: string;
let callbackUrl: string;
let s: Stack | null = null;
let n = 0;
const ids = { smtp: 0, v1: 0, oauth: 0 };
/** The key and the password of the key-file test, for the log check. */
const fileKeys: string[] = [];

const extra = () => ({
  organizations: [{ id: 7, name: 'Crypt Co', plan: 'growth', partnerCallback: { url: callbackUrl, verified: true } }],
  users: [{ id: 70, organizationId: 7, email: 'owner@crypt.test', orgRole: 'OWNER' }],
  workspaces: [{ id: 700, organizationId: 7, name: 'C main' }],
  memberships: [{ workspaceId: 700, userId: 70, role: 'OWNER' }],
  apiKeys: [
    { id: 7000, secret: WS7, name: 'c', workspaceId: 700, scopes: ALL_SCOPES, createdBy: 70 },
    { id: 7001, secret: V17, name: 'c-partner', organizationId: 7 },
  ],
});

/** (Re)start the stack on the file's database under `keys`. */
async function restart(keys: string, seed = false): Promise<Stack> {
  await s?.close();
  s = await startStack({
    db,
    clock,
    log,
    seed: seed ? seedWith(extra()) : undefined,
    env: { CREDENTIAL_KEYS: keys, GOOGLE_PROFILE_URL: `${profileUrl}/profile`, DNS_RESOLVER: dns.address },
  });
  return s;
}

/** Each request in a fresh rate-limit window and from a fresh address. */
function req(method: string, path: string, o: { key?: string; apiKey?: string; body?: unknown }) {
  clock.advance(60_000);
  return s!.request(method, path, { ...o, ip: `10.77.${Math.floor(++n / 250)}.${n % 250}` });
}

const row = async (id: number) => (await db.query(`SELECT * FROM accounts WHERE id = $1`, [id]))[0];

/** Every row of every table of the database, as text: what a dump would show. */
async function dump(of: Db): Promise<string> {
  const tables = await of.query(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`,
    [of.schema],
  );
  expect(tables.map((t) => t.table_name)).toContain('accounts');
  const out: string[] = [];
  for (const { table_name } of tables) {
    const rows = await of.query(`SELECT t::text AS line FROM "${of.schema}"."${table_name}" t`);
    out.push(`-- ${table_name}`, ...rows.map((r) => r.line as string));
  }
  return out.join('\n');
}

/** What must never be seen: each secret, and each key in base64 and hex. */
const forbidden = (secrets: string[]) => [
  ...secrets,
  ...Object.values(KEY).flatMap((k) => [
    k,
    k.replace(/=+$/, ''),
    Buffer.from(k, 'base64').toString('hex'),
    Buffer.from(k, 'base64').toString('base64url'),
  ]),
];
function expectNone(text: string, secrets: string[], what: string) {
  for (const x of forbidden(secrets)) expect(text.includes(x), `${what} holds ${x.slice(0, 12)}...`).toBe(false);
}

beforeAll(async () => {
  db = await openTestDb();
  dns = await startDnsServer({});
  profileUrl = await listen(profileServer);
  callbackUrl = `${await listen(callbackServer)}/refresh`;
});
afterAll(async () => {
  await s?.close();
  await db?.drop();
  await dns?.close();
  profileServer.close();
  callbackServer.close();
});

describe('credentials at rest', () => {
  it('stores the passwords and tokens of every connect route sealed under the current key, and never returns them', async () => {
    await restart(ring('k1'), true);
    const server = (host: string, username: string, password: string) => ({
      host,
      port: 587,
      username,
      password,
      secure: false,
    });

    const smtp = await req('POST', '/v2/workspaces/700/accounts', {
      key: WS7,
      body: {
        emailAddress: 'box@crypt.test',
        fromName: 'Box',
        smtp: server('smtp.crypt.test', 'box@crypt.test', SECRET.smtp),
        imap: server('imap.crypt.test', 'box@crypt.test', SECRET.imap),
      },
    });
    expect(smtp.status, smtp.text).toBe(201);
    ids.smtp = smtp.body.data.id;

    const v1 = await req('POST', '/v1/email-accounts', {
      apiKey: V17,
      body: {
        fromEmail: 'v1box@crypt.test',
        smtp: server('smtp.crypt.test', 'v1box', SECRET.v1smtp),
        imap: server('imap.crypt.test', 'v1box', SECRET.v1imap),
      },
    });
    expect(v1.status, v1.text).toBe(201);
    ids.v1 = v1.body.id;

    profiles.set(SECRET.token, 'oauth@crypt.test');
    const oauth = await req('POST', '/v2/workspaces/700/accounts/oauth', {
      key: WS7,
      body: {
        provider: 'google',
        emailAddress: 'oauth@crypt.test',
        accessToken: SECRET.token,
        expiresAt: new Date(clock.now() + 3_600_000).toISOString(),
      },
    });
    expect(oauth.status, oauth.text).toBe(201);
    ids.oauth = oauth.body.data.id;
    // The refresh job replaces the token with the partner callback's: sealed too.
    clock.advance(50 * 60_000);
    await jobsOf(s!.app.backend!)
      .find((j) => j.name === 'oauth-token-refresh')!
      .run();

    const all = Object.values(SECRET);
    const answers = [
      smtp,
      v1,
      oauth,
      await req('GET', `/v2/workspaces/700/accounts/${ids.smtp}`, { key: WS7 }),
      await req('GET', `/v2/workspaces/700/accounts/${ids.oauth}`, { key: WS7 }),
      await req('GET', '/v2/workspaces/700/accounts', { key: WS7 }),
      await req('POST', '/v2/workspaces/700/accounts/bulk-status', {
        key: WS7,
        body: { accountIds: [ids.smtp, ids.v1, ids.oauth] },
      }),
      await req('GET', '/v1/email-accounts', { apiKey: V17 }),
      await req('GET', `/v1/email-accounts/${ids.v1}/status`, { apiKey: V17 }),
    ];
    for (const a of answers) {
      expect(a.status, a.text).toBeLessThan(300);
      expectNone(a.text, all, 'an answer');
    }
    expect(answers[3].body.data.smtp).toEqual({
      host: 'smtp.crypt.test',
      port: 587,
      username: 'box@crypt.test',
      secure: false,
    });

    const a = await row(ids.smtp);
    expect(a.smtp_password_sealed).toMatch(/^kgc1\.k1\./);
    expect(a.imap_password_sealed).toMatch(/^kgc1\.k1\./);
    expect(a.smtp).not.toHaveProperty('password');
    expect(a.imap).not.toHaveProperty('password');
    expect((await row(ids.v1)).smtp_password_sealed).toMatch(/^kgc1\.k1\./);
    const o = await row(ids.oauth);
    expect(o.oauth_access_token_sealed).toMatch(/^kgc1\.k1\./);
    expect(o).not.toHaveProperty('oauth_access_token');

    // The backend itself reads them back (the mailbox workers' one read path).
    const svc = s!.app.backend!;
    expect(await accountCredentials(svc, ids.smtp)).toEqual({
      smtpPassword: SECRET.smtp,
      imapPassword: SECRET.imap,
      oauthAccessToken: null,
    });
    expect(await accountCredentials(svc, ids.v1)).toEqual({
      smtpPassword: SECRET.v1smtp,
      imapPassword: SECRET.v1imap,
      oauthAccessToken: null,
    });
    expect(await accountCredentials(svc, ids.oauth)).toEqual({
      smtpPassword: null,
      imapPassword: null,
      oauthAccessToken: SECRET.refreshed,
    });
  });

  it('a dump of every table shows no password, token or key', async () => {
    const text = await dump(db);
    expect(text).toContain('box@crypt.test');
    expectNone(text, Object.values(SECRET), 'the dump');
  });

  it('refuses to store a plaintext password in the connection settings, at the database', async () => {
    await expect(
      db.query(`UPDATE accounts SET smtp = smtp || '{"password":"x"}'::jsonb WHERE id = $1`, [ids.smtp]),
    ).rejects.toThrow(/accounts_credentials_sealed/);
    await expect(
      db.query(`UPDATE accounts SET oauth_access_token_sealed = 'ya29.plain' WHERE id = $1`, [ids.oauth]),
    ).rejects.toThrow(/accounts_credentials_sealed/);
  });

  it('rotation: a new key known but not current changes nothing; made current, old values stay readable and are resealed at start', async () => {
    await restart(ring('k1', 'k2'));
    expect((await row(ids.smtp)).smtp_password_sealed).toMatch(/^kgc1\.k1\./);

    await restart(ring('k2', 'k1'));
    for (const id of [ids.smtp, ids.v1]) {
      const r = await row(id);
      expect(r.smtp_password_sealed).toMatch(/^kgc1\.k2\./);
      expect(r.imap_password_sealed).toMatch(/^kgc1\.k2\./);
    }
    expect((await row(ids.oauth)).oauth_access_token_sealed).toMatch(/^kgc1\.k2\./);
    // Idempotent: the next run finds nothing to do.
    expect(await resealCredentials(s!.app.backend!)).toEqual({ sealed: 0, resealed: 0, altered: [], unknownKeys: {} });

    // k1 can now leave the ring.
    await restart(ring('k2'));
    const svc = s!.app.backend!;
    expect(await accountCredentials(svc, ids.smtp)).toEqual({
      smtpPassword: SECRET.smtp,
      imapPassword: SECRET.imap,
      oauthAccessToken: null,
    });
    expect((await accountCredentials(svc, ids.oauth)).oauthAccessToken).toBe(SECRET.refreshed);
    expect((await req('GET', `/v2/workspaces/700/accounts/${ids.smtp}`, { key: WS7 })).body.data.status).toBe('active');
  });

  it('a ring without the key of the stored values starts, says so, and reads nothing (the values are kept)', async () => {
    const before = lines.length;
    await restart(ring('k1'));
    const said = lines.slice(before).map((l) => JSON.parse(l));
    expect(said.some((l) => l.level === 40 && /not in CREDENTIAL_KEYS/.test(l.msg) && l.keyIds?.includes('k2'))).toBe(
      true,
    );
    const e = await accountCredentials(s!.app.backend!, ids.smtp).catch((err) => err);
    expect(e).toBeInstanceOf(CredentialError);
    expect(e.reason).toBe('unknown_key');
    const r = await row(ids.smtp);
    expect(r.smtp_password_sealed).toMatch(/^kgc1\.k2\./);
    expect(r.status).toBe('active');
    // Two passwords of each SMTP mailbox and the token: left under k2, not rewritten.
    expect(await resealCredentials(s!.app.backend!)).toEqual({
      sealed: 0,
      resealed: 0,
      altered: [],
      unknownKeys: { k2: 5 },
    });
  });

  it('an altered value is detected: the read fails with a clear error, the mailbox shows it, nothing answers 500', async () => {
    await restart(ring('k2'));
    const sealed: string = (await row(ids.oauth)).oauth_access_token_sealed;
    const parts = sealed.split('.');
    parts[3] = (parts[3][0] === 'A' ? 'B' : 'A') + parts[3].slice(1);
    await db.query(`UPDATE accounts SET oauth_access_token_sealed = $2 WHERE id = $1`, [ids.oauth, parts.join('.')]);

    const e = await accountCredentials(s!.app.backend!, ids.oauth).catch((err) => err);
    expect(e).toBeInstanceOf(CredentialError);
    expect(e.reason).toBe('integrity');
    expect(e.message).toMatch(/OAuth access token failed its integrity check/);

    const read = await req('GET', `/v2/workspaces/700/accounts/${ids.oauth}`, { key: WS7 });
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({
      status: 'error',
      connectionError: expect.stringMatching(/failed its integrity check.*reconnect/i),
    });
    const status = await req('POST', '/v2/workspaces/700/accounts/bulk-status', {
      key: WS7,
      body: { accountIds: [ids.oauth] },
    });
    expect(status.body.data[0]).toMatchObject({ status: 'error' });
  });

  it('an altered value found while resealing after a rotation: the start goes on, that mailbox is marked, the others are resealed', async () => {
    const sealed: string = (await row(ids.v1)).imap_password_sealed;
    const parts = sealed.split('.');
    parts[4] = (parts[4][0] === 'A' ? 'B' : 'A') + parts[4].slice(1);
    await db.query(`UPDATE accounts SET imap_password_sealed = $2 WHERE id = $1`, [ids.v1, parts.join('.')]);

    const before = lines.length;
    await restart(ring('k3', 'k2'));
    const said = lines.slice(before).map((l) => JSON.parse(l));
    expect(
      said.some(
        (l) => l.level === 40 && l.accountId === ids.v1 && l.field === 'imap_password' && /integrity/.test(l.msg),
      ),
    ).toBe(true);

    const v1 = await row(ids.v1);
    expect(v1.status).toBe('error');
    expect(v1.imap_password_sealed).toMatch(/^kgc1\.k2\./); // left as found, for whoever investigates
    expect(v1.smtp_password_sealed).toMatch(/^kgc1\.k3\./);
    expect((await row(ids.smtp)).smtp_password_sealed).toMatch(/^kgc1\.k3\./);
    expect(await accountCredentials(s!.app.backend!, ids.smtp)).toMatchObject({ smtpPassword: SECRET.smtp });
    const v1status = await req('GET', `/v1/email-accounts/${ids.v1}/status`, { apiKey: V17 });
    expect(v1status.status).toBe(200);
  });

  it('a database written before the sealing migration is sealed at the first start', async () => {
    // The migrations up to the one before sealing, and plaintext rows as the old code wrote them.
    const here = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));
    const old = mkdtempSync(join(tmpdir(), 'kg-mig-'));
    for (const f of readdirSync(here).filter((f) => f.endsWith('.sql') && f < '042'))
      cpSync(join(here, f), join(old, f));
    const url = process.env.DATABASE_URL;
    const schema = url ? `t_${hex()}` : 'public';
    const legacy = await openDb({ databaseUrl: url, dataDir: 'memory://', schema });
    let stack: Stack | null = null;
    try {
      await migrate(legacy, old);
      // The rows the old code had, written with the old schema's columns (today's seed writes today's;
      // the stack below applies it once the schema is current).
      await legacy.query(`INSERT INTO organizations (id, name, plan) VALUES (1, 'Acme', 'growth')`);
      await legacy.query(`INSERT INTO workspaces (id, organization_id, name) VALUES (100, 1, 'Main')`);
      const conn = (password: string) =>
        JSON.stringify({ host: 'mail.acme.test', port: 587, username: 'old', password, secure: false });
      const [a] = await legacy.query(
        `INSERT INTO accounts (workspace_id, email_address, provider, smtp, imap) VALUES (100, 'legacy@acme.test', 'smtp', $1::jsonb, $2::jsonb) RETURNING id`,
        [conn(SECRET.legacySmtp), conn(SECRET.legacyImap)],
      );
      const [b] = await legacy.query(
        `INSERT INTO accounts (workspace_id, email_address, provider, oauth_access_token, oauth_expires_at, oauth_source) VALUES (100, 'legacy-oauth@acme.test', 'google', $1, now() + interval '1 day', 'partner') RETURNING id`,
        [SECRET.legacyToken],
      );
      expect(await dump(legacy)).toContain(SECRET.legacyToken);

      stack = await startStack({ db: legacy, clock, log, env: { CREDENTIAL_KEYS: ring('k1') } });
      const text = await dump(legacy);
      expect(text).toContain('legacy@acme.test');
      expectNone(text, [SECRET.legacySmtp, SECRET.legacyImap, SECRET.legacyToken], 'the upgraded dump');
      const [ra] = await legacy.query(`SELECT * FROM accounts WHERE id = $1`, [a.id]);
      expect(ra).toMatchObject({
        smtp: { host: 'mail.acme.test', port: 587, username: 'old', secure: false },
        credentials_plaintext: null,
      });
      expect(ra.smtp_password_sealed).toMatch(/^kgc1\.k1\./);
      expect(await accountCredentials(stack.app.backend!, a.id)).toEqual({
        smtpPassword: SECRET.legacySmtp,
        imapPassword: SECRET.legacyImap,
        oauthAccessToken: null,
      });
      expect(await accountCredentials(stack.app.backend!, b.id)).toEqual({
        smtpPassword: null,
        imapPassword: null,
        oauthAccessToken: SECRET.legacyToken,
      });
    } finally {
      await stack?.close();
      await legacy.close();
      rmSync(old, { recursive: true, force: true });
      if (url) {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => c.end());
      }
    }
  });

  it('all-in-one without CREDENTIAL_KEYS keeps a key file in DATA_DIR: values stay readable across restarts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kg-data-'));
    const own = await openTestDb();
    const env = { DATA_DIR: dataDir, DNS_RESOLVER: dns.address };
    let stack: Stack | null = null;
    try {
      stack = await startStack({ db: own, clock, log, seed: seedWith(extra()), env });
      clock.advance(60_000);
      const password = `file-key-Pw-${hex()}`;
      const server = { host: 'smtp.crypt.test', port: 587, username: 'u', password, secure: false };
      const r = await stack.request('POST', '/v2/workspaces/700/accounts', {
        key: WS7,
        ip: '10.78.0.1',
        body: { emailAddress: 'file@crypt.test', fromName: 'File', smtp: server, imap: server },
      });
      expect(r.status, r.text).toBe(201);
      const keyId = stack.app.backend!.credentials.currentKeyId;
      await stack.close();
      stack = await startStack({ db: own, clock, log, env });
      expect(stack.app.backend!.credentials.currentKeyId).toBe(keyId);
      expect(await accountCredentials(stack.app.backend!, r.body.data.id)).toMatchObject({
        smtpPassword: password,
        imapPassword: password,
      });
      expectNone(
        await dump(own),
        [password, readFileSync(join(dataDir, 'credential-keys'), 'utf8').trim().split(':')[1]],
        'the dump',
      );
      fileKeys.push(readFileSync(join(dataDir, 'credential-keys'), 'utf8').trim().split(':')[1], password);
    } finally {
      await stack?.close();
      await own.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('no log line of this file holds a password, a token or a key', () => {
    expect(lines.length).toBeGreaterThan(10);
    expectNone(lines.join('\n'), [...Object.values(SECRET), ...fileKeys], 'the log');
  });
});
