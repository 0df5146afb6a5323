// Partner OAuth through the gateway: connecting Google/Microsoft mailboxes with partner-held access
// tokens (profile lookup, conflicts, strict body), autostart of warming under the plan's cap, token
// refresh through the partner callback (a job run by hand on a fake clock), and consent links.
import http from 'node:http';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { ALL_SCOPES, K } from '../fixtures/seed.js';
import { jobsOf } from '../../src/backend/jobs.js';
import { tryAutoStart } from '../../src/backend/warmup/lifecycle.js';
import { codeVerifierFor, verifyState } from '../../src/backend/oauth/consent.js';
import { listenLocal } from '../helpers/listen.js';

const clock = new FakeClock();
let s: Stack;
let dns: DnsServer;
let n = 0;

const WS4 = 'svc_ws_' + 'OauthOrg4Ws0000000000000000000000001';
const WS4B = 'svc_ws_' + 'OauthOrg4WsB000000000000000000000001';
const WS5 = 'svc_ws_' + 'OauthOrg5Ws0000000000000000000000001';
const WS6 = 'svc_ws_' + 'OauthOrg6Ws0000000000000000000000001';

// --- a fake provider profile service: token -> profile ---
const google = new Map<string, string>();
const microsoft = new Map<string, { mail: string | null; userPrincipalName: string }>();
const seenAuth: string[] = [];
const profileServer = http.createServer((req, res) => {
  const auth = req.headers.authorization ?? '';
  seenAuth.push(auth);
  const token = auth.replace(/^Bearer /, '');
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (token === 'tok-500') return send(500, { error: 'boom' });
  if (req.url === '/gmail/profile' && google.has(token))
    return send(200, { emailAddress: google.get(token), messagesTotal: 1 });
  if (req.url === '/graph/me' && microsoft.has(token)) return send(200, microsoft.get(token));
  send(401, { error: 'invalid_token' });
});

// --- a fake partner callback: records calls, answers what the test sets ---
const calls: { accountId: number; emailAddress: string; provider: string }[] = [];
let callbackReply: () => { status: number; body: unknown } = () => ({ status: 500, body: {} });
const callbackServer = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    calls.push(JSON.parse(raw));
    const r = callbackReply();
    res.writeHead(r.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(r.body));
  });
});

const listen = async (srv: http.Server) => (await listenLocal(srv)).url;

const GOOD_DNS = {
  'good.test': { txt: ['v=spf1 include:_spf.google.com ~all'], mx: [{ exchange: 'mx.good.test', priority: 10 }] },
  '_dmarc.good.test': { txt: ['v=DMARC1; p=reject'] },
  'google._domainkey.good.test': { txt: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'] },
};

beforeAll(async () => {
  dns = await startDnsServer(GOOD_DNS);
  const profileUrl = await listen(profileServer);
  const callbackUrl = `${await listen(callbackServer)}/refresh`;
  s = await startStack({
    clock,
    env: {
      GOOGLE_PROFILE_URL: `${profileUrl}/gmail/profile`,
      MICROSOFT_PROFILE_URL: `${profileUrl}/graph/me`,
      DNS_RESOLVER: dns.address,
    },
    extra: {
      organizations: [
        { id: 4, name: 'Partner Co', plan: 'growth', partnerCallback: { url: callbackUrl, verified: true } },
        // trial: warmingMailboxCap 5
        { id: 5, name: 'Small Co', plan: 'trial', partnerCallback: { url: callbackUrl, verified: true } },
        { id: 6, name: 'Unverified Co', plan: 'growth', partnerCallback: { url: callbackUrl, verified: false } },
      ],
      users: [
        { id: 40, organizationId: 4, email: 'owner@partner.test', orgRole: 'OWNER' },
        { id: 50, organizationId: 5, email: 'owner@small.test', orgRole: 'OWNER' },
        { id: 60, organizationId: 6, email: 'owner@unverified.test', orgRole: 'OWNER' },
      ],
      workspaces: [
        { id: 400, organizationId: 4, name: 'P main' },
        { id: 401, organizationId: 4, name: 'P other' },
        { id: 500, organizationId: 5, name: 'S main' },
        { id: 600, organizationId: 6, name: 'U main' },
      ],
      memberships: [
        { workspaceId: 400, userId: 40, role: 'OWNER' },
        { workspaceId: 401, userId: 40, role: 'OWNER' },
        { workspaceId: 500, userId: 50, role: 'OWNER' },
        { workspaceId: 600, userId: 60, role: 'OWNER' },
      ],
      apiKeys: [
        { id: 4000, secret: WS4, name: 'p', workspaceId: 400, scopes: ALL_SCOPES, createdBy: 40 },
        { id: 4001, secret: WS4B, name: 'p2', workspaceId: 401, scopes: ALL_SCOPES, createdBy: 40 },
        { id: 5000, secret: WS5, name: 's', workspaceId: 500, scopes: ALL_SCOPES, createdBy: 50 },
        { id: 6000, secret: WS6, name: 'u', workspaceId: 600, scopes: ALL_SCOPES, createdBy: 60 },
      ],
      accounts: [
        {
          id: 4500,
          workspaceId: 400,
          emailAddress: 'smtp@good.test',
          provider: 'smtp',
          status: 'active',
          verification: 'passed',
          warmupMaxLimit: 20,
        },
        ...Array.from({ length: 5 }, (_, i) => ({
          id: 5500 + i,
          workspaceId: 500,
          emailAddress: `w${i}@small.test`,
          provider: 'google',
          status: 'warming',
          verification: 'passed',
          warmupMaxLimit: 20,
        })),
      ],
    },
  });
});
afterAll(async () => {
  await s?.close();
  await dns?.close();
  profileServer.close();
  callbackServer.close();
});

/** Each request in a fresh rate-limit window and from a fresh IP. */
function req(method: string, path: string, key: string, body?: unknown) {
  clock.advance(60_000);
  return s.request(method, path, { key, body, ip: `10.33.${Math.floor(++n / 250)}.${n % 250}` });
}
const inMs = (ms: number) => new Date(clock.now() + ms).toISOString();
const DAY = 86_400_000;
const connect = (wid: number, key: string, body: Record<string, unknown>) =>
  req('POST', `/v2/workspaces/${wid}/accounts/oauth`, key, { provider: 'google', expiresAt: inMs(DAY), ...body });
/** The account's row, with its stored token opened (it is stored sealed: src/backend/credentials/). */
const account = async (email: string) => {
  const a = (await s.db.query(`SELECT * FROM accounts WHERE lower(email_address) = $1`, [email]))[0];
  const sealed = a?.oauth_access_token_sealed;
  return (
    a &&
    ({
      ...a,
      oauth_access_token: sealed ? s.app.backend!.credentials.open('oauth_access_token', sealed) : null,
    } as typeof a)
  );
};
const job = (name: string) => jobsOf(s.app.backend!).find((j) => j.name === name)!;

describe('POST /v2/workspaces/{wid}/accounts/oauth: rule 1, partner callback', () => {
  it('403 partner_not_configured without a partner callback, before the body is looked at', async () => {
    google.set('tok-beta', 'x@beta.test');
    const r = await connect(200, K.org2Ws, { emailAddress: 'x@beta.test', accessToken: 'tok-beta' });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('partner_not_configured');
    const bad = await req('POST', '/v2/workspaces/200/accounts/oauth', K.org2Ws, { nonsense: true });
    expect(bad.body.error.code).toBe('partner_not_configured');
    expect(await account('x@beta.test')).toBeUndefined();
  });

  it('403 partner_not_configured with a registered but unverified callback', async () => {
    google.set('tok-u', 'x@unverified.test');
    const r = await connect(600, WS6, { emailAddress: 'x@unverified.test', accessToken: 'tok-u' });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('partner_not_configured');
  });
});

describe('POST /v2/workspaces/{wid}/accounts/oauth: the body', () => {
  it('refuses any refresh-token field by name (400 invalid_request)', async () => {
    for (const field of ['refreshToken', 'refresh_token', 'RefreshToken']) {
      const r = await connect(400, WS4, { emailAddress: 'r@good.test', accessToken: 'x', [field]: 'secret-refresh' });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
      expect(r.text).not.toContain('secret-refresh');
    }
  });

  it('is strict and validates each field', async () => {
    for (const [body, field] of [
      [{ emailAddress: 'r@good.test', accessToken: 'x', provider: 'yahoo' }, 'provider'],
      [{ emailAddress: 'not-an-address', accessToken: 'x' }, 'emailAddress'],
      [{ emailAddress: 'r@good.test' }, 'accessToken'],
      [{ emailAddress: 'r@good.test', accessToken: 'x', expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ emailAddress: 'r@good.test', accessToken: 'x', scopes: 'all' }, 'scopes'],
    ] as const) {
      const r = await connect(400, WS4, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });

  it('expiresAt must be more than five minutes ahead of the service clock', async () => {
    google.set('tok-soon', 'soon@good.test');
    // The request itself moves the fake clock a minute on: 5 minutes from "now before" is 4 from "now".
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth', WS4, {
      provider: 'google',
      emailAddress: 'soon@good.test',
      accessToken: 'tok-soon',
      expiresAt: inMs(6 * 60_000),
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'expiresAt' } });
    const ok = await req('POST', '/v2/workspaces/400/accounts/oauth', WS4, {
      provider: 'google',
      emailAddress: 'soon@good.test',
      accessToken: 'tok-soon',
      expiresAt: inMs(60_000 + 5 * 60_000 + 1000),
    });
    expect(ok.status).toBe(201);
  });

  it('needs accounts:write at EDITOR (gateway 150003)', async () => {
    const r = await connect(100, K.wsViewer, { emailAddress: 'v@acme.test', accessToken: 'x' });
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150003');
  });
});

describe('POST /v2/workspaces/{wid}/accounts/oauth: identification and storage', () => {
  it('connects a Google mailbox identified by the token; stores the token and its expiry, never returns it', async () => {
    google.set('tok-google-1', 'First@Good.test');
    seenAuth.length = 0;
    const expiresAt = inMs(DAY);
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth', WS4, {
      provider: 'google',
      emailAddress: 'first@good.test',
      accessToken: 'tok-google-1',
      expiresAt,
    });
    expect(r.status).toBe(201);
    expect(seenAuth).toEqual(['Bearer tok-google-1']);
    expect(r.body.data).toMatchObject({
      workspaceId: 400,
      emailAddress: 'first@good.test',
      provider: 'google',
      status: 'active',
      verification: 'pending',
      connectedVia: 'partner_oauth',
      tokenExpiresAt: expiresAt,
      warmup: { state: 'waiting', reason: 'verification_pending' },
    });
    expect(r.text).not.toContain('tok-google-1');
    const a = await account('first@good.test');
    expect(a.oauth_access_token).toBe('tok-google-1');
    expect(new Date(a.oauth_expires_at).toISOString()).toBe(expiresAt);
    expect(a.oauth_source).toBe('partner');
    expect(a.workspace_id).toBe(400);
  });

  it('connects a Microsoft mailbox by mail or userPrincipalName', async () => {
    microsoft.set('tok-ms-1', { mail: null, userPrincipalName: 'Ms.User@good.test' });
    const r = await connect(400, WS4, {
      provider: 'microsoft',
      emailAddress: 'ms.user@good.test',
      accessToken: 'tok-ms-1',
    });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ provider: 'microsoft', emailAddress: 'ms.user@good.test' });
    microsoft.set('tok-ms-2', { mail: 'alias@good.test', userPrincipalName: 'upn@tenant.onmicrosoft.test' });
    const alias = await connect(400, WS4, {
      provider: 'microsoft',
      emailAddress: 'alias@good.test',
      accessToken: 'tok-ms-2',
    });
    expect(alias.status).toBe(201);
  });

  it('422 email_mismatch when the token belongs to another mailbox; nothing is stored', async () => {
    google.set('tok-other', 'other@good.test');
    const r = await connect(400, WS4, { emailAddress: 'mine@good.test', accessToken: 'tok-other' });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('email_mismatch');
    expect(await account('mine@good.test')).toBeUndefined();
    expect(await account('other@good.test')).toBeUndefined();
    // The provider (google) is asked, not the other one.
    microsoft.set('tok-ms-only', { mail: 'mine@good.test', userPrincipalName: 'mine@good.test' });
    const wrongProvider = await connect(400, WS4, { emailAddress: 'mine@good.test', accessToken: 'tok-ms-only' });
    expect(wrongProvider.status).toBe(422);
    expect(wrongProvider.body.error.code).toBe('unprocessable_entity');
  });

  it('a token the provider refuses is 422 unprocessable_entity; a failing provider 502 bad_gateway', async () => {
    const r = await connect(400, WS4, { emailAddress: 'mine@good.test', accessToken: 'tok-unknown' });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'unprocessable_entity', details: { field: 'accessToken' } });
    const down = await connect(400, WS4, { emailAddress: 'mine@good.test', accessToken: 'tok-500' });
    expect(down.status).toBe(502);
    expect(down.body.error.code).toBe('bad_gateway');
  });

  it('409 conflict for an address present in another workspace, of this organization or another', async () => {
    google.set('tok-first-again', 'first@good.test');
    const r = await connect(401, WS4B, { emailAddress: 'first@good.test', accessToken: 'tok-first-again' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('conflict');
    // The error, not the whole answer: the envelope's request id and timestamp may hold '400' by chance
    // (a CI run read a timestamp's .400 ms).
    expect(JSON.stringify(r.body.error)).not.toContain('400');
    google.set('tok-acme', 'a@acme.test');
    const other = await connect(400, WS4, { emailAddress: 'a@acme.test', accessToken: 'tok-acme' });
    expect(other.status).toBe(409);
    const a = await account('a@acme.test');
    expect(a.workspace_id).toBe(100);
    expect(a.oauth_access_token).toBeNull();
  });

  it('409 conflict for an address connected in this workspace by another method', async () => {
    google.set('tok-smtp', 'smtp@good.test');
    const r = await connect(400, WS4, { emailAddress: 'smtp@good.test', accessToken: 'tok-smtp' });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('conflict');
    expect((await account('smtp@good.test')).provider).toBe('smtp');
  });
});

describe('warming without an enable call', () => {
  /** The mailbox checker reports the send-and-receive check (docs/decisions.md section 7). */
  const verify = async (email: string, result: 'passed' | 'failed') => {
    const r = await s.internal('POST', `/internal/accounts/${(await account(email)).id}/verification`, { result });
    expect(r.status).toBe(200);
    return r.body.data;
  };
  const HOUR = 3_600_000;

  it('starts once the send-and-receive check and DNS pass', async () => {
    google.set('tok-auto', 'auto@good.test');
    const r = await connect(400, WS4, { emailAddress: 'auto@good.test', accessToken: 'tok-auto' });
    expect(r.body.data.warmup).toEqual({ state: 'waiting', reason: 'verification_pending' });
    expect((await account('auto@good.test')).auto_warmup).toBe(true);
    const v = await verify('auto@good.test', 'passed');
    expect(v.autoStart).toBe('started');
    const a = await account('auto@good.test');
    expect(a.status).toBe('warming');
    expect(a.auto_warmup).toBe(false);
  });

  it('waits while DNS fails, and starts once the records are fixed', async () => {
    google.set('tok-late', 'late@late.test');
    const r = await connect(400, WS4, { emailAddress: 'late@late.test', accessToken: 'tok-late' });
    expect(r.status).toBe(201);
    expect((await verify('late@late.test', 'passed')).autoStart).toBe('dns_failed');
    expect((await account('late@late.test')).status).toBe('active');
    for (const [k, v] of Object.entries(GOOD_DNS)) dns.set(k.replace('good.test', 'late.test'), v);
    // The warmup domain's auto-start job re-checks DNS of waiting partner mailboxes (at most hourly).
    clock.advance(HOUR + 60_000);
    await job('warmup.auto-start').run();
    expect((await account('late@late.test')).status).toBe('warming');
  });

  it('never starts a mailbox whose check failed', async () => {
    google.set('tok-fail', 'fail@good.test');
    await connect(400, WS4, { emailAddress: 'fail@good.test', accessToken: 'tok-fail' });
    await verify('fail@good.test', 'failed');
    clock.advance(HOUR + 60_000);
    await job('warmup.auto-start').run();
    expect((await account('fail@good.test')).status).toBe('active');
    google.set('tok-fail-2', 'fail@good.test');
    const again = await connect(400, WS4, { emailAddress: 'fail@good.test', accessToken: 'tok-fail-2' });
    expect(again.body.data.warmup).toEqual({ state: 'waiting', reason: 'verification_failed' });
  });

  it('a reconnect with a fresh token resumes an expired mailbox at once when its checks passed', async () => {
    await s.db.query(`UPDATE accounts SET status = 'auth-expired' WHERE email_address = 'auto@good.test'`);
    google.set('tok-auto-2', 'auto@good.test');
    const r = await connect(400, WS4, { emailAddress: 'auto@good.test', accessToken: 'tok-auto-2' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'warming', warmup: { state: 'warming', reason: null } });
    expect((await account('auto@good.test')).oauth_access_token).toBe('tok-auto-2');
  });

  it('a reconnect keeps a user-paused mailbox paused', async () => {
    await s.db.query(`UPDATE accounts SET status = 'paused' WHERE email_address = 'auto@good.test'`);
    google.set('tok-auto-3', 'auto@good.test');
    const r = await connect(400, WS4, { emailAddress: 'auto@good.test', accessToken: 'tok-auto-3' });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'paused', warmup: { state: 'off', reason: 'paused' } });
  });

  it("does not start past the plan's warmingMailboxCap (warming_capacity_reached), and starts when a slot frees", async () => {
    // Org 5 is on trial (warmingMailboxCap 5) with five mailboxes warming.
    google.set('tok-cap', 'cap@good.test');
    const r = await connect(500, WS5, { emailAddress: 'cap@good.test', accessToken: 'tok-cap' });
    expect(r.status).toBe(201);
    expect((await verify('cap@good.test', 'passed')).autoStart).toBe('warming_capacity_reached');
    expect((await account('cap@good.test')).status).toBe('active');
    // A reconnect reports the same reason in its answer.
    await s.db.query(`UPDATE accounts SET status = 'auth-expired' WHERE email_address = 'cap@good.test'`);
    google.set('tok-cap-2', 'cap@good.test');
    const again = await connect(500, WS5, { emailAddress: 'cap@good.test', accessToken: 'tok-cap-2' });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({
      status: 'active',
      warmup: { state: 'waiting', reason: 'warming_capacity_reached' },
    });
    // A slot frees: the auto-start job starts it.
    await s.db.query(`UPDATE accounts SET status = 'paused' WHERE id = 5500`);
    clock.advance(HOUR + 60_000);
    await job('warmup.auto-start').run();
    expect((await account('cap@good.test')).status).toBe('warming');
    const [c] = await s.db.query(
      `SELECT count(*)::int AS n FROM accounts WHERE workspace_id = 500 AND status = 'warming'`,
    );
    expect(c.n).toBe(5);
  });

  it('concurrent starts never exceed the cap', async () => {
    // Two more partner mailboxes in org 5, both eligible, one slot (after pausing another).
    for (const who of ['race1', 'race2']) {
      google.set(`tok-${who}`, `${who}@good.test`);
      expect((await connect(500, WS5, { emailAddress: `${who}@good.test`, accessToken: `tok-${who}` })).status).toBe(
        201,
      );
    }
    await s.db.query(
      `UPDATE accounts SET verification = 'passed' WHERE email_address IN ('race1@good.test','race2@good.test')`,
    );
    await s.db.query(`UPDATE accounts SET status = 'paused' WHERE id = 5501`);
    const [a1, a2] = [await account('race1@good.test'), await account('race2@good.test')];
    const outs = await Promise.all([tryAutoStart(s.app.backend!, a1.id), tryAutoStart(s.app.backend!, a2.id)]);
    expect([...outs].sort()).toEqual(['started', 'warming_capacity_reached']);
    const [c] = await s.db.query(
      `SELECT count(*)::int AS n FROM accounts WHERE workspace_id = 500 AND status = 'warming'`,
    );
    expect(c.n).toBe(5);
  });
});

describe('token refresh through the partner callback', () => {
  it('refreshes a token nearing expiry; backs off on failure; marks it auth-expired when it runs out; recovers', async () => {
    const refresh = job('oauth-token-refresh');
    google.set('tok-r1', 'refresh@good.test');
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth', WS4, {
      provider: 'google',
      emailAddress: 'refresh@good.test',
      accessToken: 'tok-r1',
      expiresAt: inMs(60_000 + 10 * 60_000),
    });
    expect(r.status).toBe(201);
    const id = r.body.data.id;
    const mine = () => calls.filter((c) => c.accountId === id);

    // Within 15 minutes of expiry: the callback is asked with the mailbox's identity only.
    const fresh = new Date(clock.now() + 3_600_000).toISOString();
    callbackReply = () => ({ status: 200, body: { accessToken: 'tok-r2', expiresAt: fresh } });
    await refresh.run();
    expect(mine()).toEqual([{ accountId: id, emailAddress: 'refresh@good.test', provider: 'google' }]);
    let a = await account('refresh@good.test');
    expect(a.oauth_access_token).toBe('tok-r2');
    expect(new Date(a.oauth_expires_at).toISOString()).toBe(fresh);
    expect(a.oauth_refresh_failures).toBe(0);

    // Far from expiry: not asked.
    await refresh.run();
    expect(mine()).toHaveLength(1);

    // 50 minutes on, 10 minutes left: the callback fails; the next try waits for the backoff.
    clock.advance(50 * 60_000);
    callbackReply = () => ({ status: 503, body: {} });
    await refresh.run();
    expect(mine()).toHaveLength(2);
    a = await account('refresh@good.test');
    expect(a.oauth_refresh_failures).toBe(1);
    expect(a.oauth_refresh_error).toContain('503');
    expect(a.oauth_access_token).toBe('tok-r2');
    await refresh.run();
    expect(mine()).toHaveLength(2);
    clock.advance(61_000);
    callbackReply = () => ({ status: 200, body: { accessToken: 'tok-r3' } }); // no expiresAt: invalid answer
    await refresh.run();
    expect(mine()).toHaveLength(3);
    expect((await account('refresh@good.test')).oauth_refresh_failures).toBe(2);

    // The token runs out without a fresh one: the mailbox is auth-expired.
    clock.advance(15 * 60_000);
    callbackReply = () => ({ status: 500, body: {} });
    await refresh.run();
    a = await account('refresh@good.test');
    expect(a.status).toBe('auth-expired');
    expect(a.oauth_access_token).toBe('tok-r2');

    // The partner answers again: a fresh token brings it back to active, ready to warm by itself.
    clock.advance(10 * 60_000);
    const later = new Date(clock.now() + 3_600_000).toISOString();
    callbackReply = () => ({ status: 200, body: { accessToken: 'tok-r4', expiresAt: later } });
    await refresh.run();
    a = await account('refresh@good.test');
    expect(a).toMatchObject({
      oauth_access_token: 'tok-r4',
      oauth_refresh_failures: 0,
      oauth_refresh_error: null,
      auto_warmup: true,
    });
    // Its send-and-receive check is still pending, so it is active and waits to warm by itself.
    expect(a.status).toBe('active');
  });

  it('two runs at once (two backends) ask the callback once per token', async () => {
    google.set('tok-twice', 'twice@good.test');
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth', WS4, {
      provider: 'google',
      emailAddress: 'twice@good.test',
      accessToken: 'tok-twice',
      expiresAt: inMs(60_000 + 10 * 60_000),
    });
    const id = r.body.data.id;
    const fresh = new Date(clock.now() + 3_600_000).toISOString();
    callbackReply = () => ({ status: 200, body: { accessToken: 'tok-twice-2', expiresAt: fresh } });
    const refresh = job('oauth-token-refresh');
    await Promise.all([refresh.run(), refresh.run(), refresh.run()]);
    expect(calls.filter((c) => c.accountId === id)).toHaveLength(1);
    expect((await account('twice@good.test')).oauth_access_token).toBe('tok-twice-2');
  });

  it('never asks an organization whose callback is not verified', async () => {
    await s.db.query(`UPDATE organizations SET partner_callback_verified = false WHERE id = 4`);
    await s.db.query(`UPDATE accounts SET oauth_expires_at = $1 WHERE email_address = 'first@good.test'`, [
      new Date(clock.now() + 60_000),
    ]);
    const id = (await account('first@good.test')).id;
    await job('oauth-token-refresh').run();
    expect(calls.filter((c) => c.accountId === id)).toHaveLength(0);
    await s.db.query(`UPDATE organizations SET partner_callback_verified = true WHERE id = 4`);
  });
});

describe('POST /v2/workspaces/{wid}/accounts/oauth-url', () => {
  it('503 service_unavailable while no OAuth client is configured', async () => {
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth-url', WS4, {
      provider: 'google',
      redirectUri: 'https://app.partner.test/cb',
    });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe('service_unavailable');
  });

  it('answers a consent URL with a signed, expiring state and a PKCE challenge', async () => {
    s.app.backend!.config.oauthClientIds.google = 'cid-google'; // as GOOGLE_OAUTH_CLIENT_ID would
    const r = await req('POST', '/v2/workspaces/400/accounts/oauth-url', WS4, {
      provider: 'google',
      redirectUri: 'https://app.partner.test/cb',
      loginHint: 'first@good.test',
    });
    expect(r.status).toBe(200);
    const { url, state, expiresAt, provider } = r.body.data;
    expect(provider).toBe('google');
    expect(expiresAt).toBe(new Date(clock.now() + 10 * 60_000).toISOString());
    const u = new URL(url);
    expect(u.origin + u.pathname).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    expect(Object.fromEntries(u.searchParams)).toMatchObject({
      client_id: 'cid-google',
      redirect_uri: 'https://app.partner.test/cb',
      response_type: 'code',
      state,
      code_challenge_method: 'S256',
      access_type: 'offline',
      login_hint: 'first@good.test',
    });
    const pepper = s.app.backend!.pepper;
    expect(u.searchParams.get('code_challenge')).toBe(
      createHash('sha256').update(codeVerifierFor(pepper, state)).digest('base64url'),
    );
    expect(verifyState(pepper, state, clock.now())).toMatchObject({
      o: 4,
      w: 400,
      p: 'google',
      r: 'https://app.partner.test/cb',
      k: 4000,
    });
    // Tampered or expired states are refused.
    const [payload, sig] = state.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), w: 401 }),
    ).toString('base64url');
    expect(verifyState(pepper, `${forged}.${sig}`, clock.now())).toBeNull();
    expect(verifyState(pepper, state, clock.now() + 10 * 60_000 + 1)).toBeNull();
  });

  it('refuses an unsafe or missing redirect URI (400 invalid_request)', async () => {
    s.app.backend!.config.oauthClientIds.google = 'cid-google'; // as GOOGLE_OAUTH_CLIENT_ID would
    for (const body of [
      { provider: 'google', redirectUri: 'http://evil.test/cb' },
      { provider: 'google', redirectUri: 'https://u:p@app.test/cb' },
      { provider: 'google' },
    ]) {
      const r = await req('POST', '/v2/workspaces/400/accounts/oauth-url', WS4, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'redirectUri' } });
    }
    const loopback = await req('POST', '/v2/workspaces/400/accounts/oauth-url', WS4, {
      provider: 'google',
      redirectUri: 'http://127.0.0.1:8765/cb',
    });
    expect(loopback.status).toBe(200);
    const bad = await req('POST', '/v2/workspaces/400/accounts/oauth-url', WS4, {
      provider: 'yahoo',
      redirectUri: 'https://app.test/cb',
    });
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', details: { field: 'provider' } });
  });
});
