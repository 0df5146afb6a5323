// The requests whose answers the workspace API must keep byte for byte while its contract becomes
// configuration (issue 38): allowed reads and writes of /v2 and /v1, every refusal of both interfaces,
// the gateway's own routes. They run in this order against one fresh stack, so a step may rely on what
// earlier ones spent; each group starts on a fresh minute and its own client address so that no
// refusal leaks into the next group.
import { ALL_SCOPES, K } from '../../fixtures/seed.js';
import { testSecret } from '../../helpers/keys.js';

export const X = {
  paused: testSecret('svc_ws_', 'AnswersPaused'),
  pausedPartner: testSecret('svc_v1_', 'AnswersPausedPartner'),
  quota: testSecret('svc_ws_', 'AnswersQuota'),
  /** Read budget raised above the address layer, so 100 reads reach the address's limit first. */
  wide: testSecret('svc_ws_', 'AnswersWide'),
  unknown: testSecret('svc_ws_', 'AnswersUnknown'),
  unknownPartner: testSecret('svc_v1_', 'AnswersUnknown'),
  revoked: testSecret('svc_ws_', 'AnswersRevoked'),
  expired: testSecret('svc_ws_', 'AnswersExpired'),
  /** A partner key of organization 3, whose API access is off. */
  noAccessPartner: testSecret('svc_v1_', 'AnswersNoAccess'),
};

/** Seed sections added to the base seed: a paused organization, one with a monthly quota of 3, a wide key. */
export const EXTRA_SEED = {
  organizations: [
    { id: 7, name: 'Paused Co', plan: 'growth', apiAccess: true, paused: true, warmupCap: null },
    {
      id: 8,
      name: 'Quota Co',
      plan: 'growth',
      apiAccess: true,
      paused: false,
      warmupCap: null,
      limits: { monthlyQuota: 3 },
    },
  ],
  users: [
    { id: 70, organizationId: 7, email: 'owner@paused.test', orgRole: 'OWNER' },
    { id: 80, organizationId: 8, email: 'owner@quota.test', orgRole: 'OWNER' },
  ],
  workspaces: [
    { id: 700, organizationId: 7, name: 'Paused main', dailyWarmupBudget: 0 },
    { id: 800, organizationId: 8, name: 'Quota main', dailyWarmupBudget: 0 },
  ],
  memberships: [
    { workspaceId: 700, userId: 70, role: 'OWNER' },
    { workspaceId: 800, userId: 80, role: 'OWNER' },
  ],
  apiKeys: [
    {
      id: 7000,
      secret: X.paused,
      name: 'paused ws',
      workspaceId: 700,
      role: 'ADMIN',
      scopes: ALL_SCOPES,
      createdBy: 70,
    },
    { id: 7001, secret: X.pausedPartner, name: 'paused partner', organizationId: 7 },
    { id: 3001, secret: X.noAccessPartner, name: 'gamma partner', organizationId: 3 },
    { id: 8000, secret: X.quota, name: 'quota ws', workspaceId: 800, role: 'ADMIN', scopes: ALL_SCOPES, createdBy: 80 },
    {
      id: 1090,
      secret: X.wide,
      name: 'wide reads',
      workspaceId: 100,
      role: 'ADMIN',
      scopes: ALL_SCOPES,
      createdBy: 10,
      limits: { read: 500 },
    },
    {
      id: 1091,
      secret: X.revoked,
      name: 'revoked',
      workspaceId: 100,
      role: 'ADMIN',
      scopes: ALL_SCOPES,
      createdBy: 10,
      revoked: true,
    },
    {
      id: 1092,
      secret: X.expired,
      name: 'expired',
      workspaceId: 100,
      role: 'ADMIN',
      scopes: ALL_SCOPES,
      createdBy: 10,
      expiresAt: '2026-01-01T00:00:00Z',
    },
  ],
};

/** The body limit of the recorded stack (BODY_LIMIT_BYTES): small, so a 413 needs no megabyte. */
export const BODY_LIMIT = 2048;
export const CORS_ORIGIN = 'https://app.example.test';

export interface Call {
  name: string;
  method: string;
  /** Sent as written (no URL parser normalizes it). */
  path: string;
  /** `Authorization: Bearer <key>`. */
  key?: string;
  /** `X-Api-Key`. */
  apiKey?: string;
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body?: unknown;
  /** The client address, sent as X-Forwarded-For from the trusted loopback peer. */
  ip: string;
  /** Send it this many times: the answers before the last are recorded by status and code only. */
  repeat?: number;
}

/** A step moves the clock to the next minute's 5th second, or by `ms`; anything else is a call. */
export type Step = Call | { clock: 'next-minute' } | { clock: number };

const W = '/v2/workspaces/100';
const json = { 'content-type': 'application/json' };

export const CORPUS: Step[] = [
  { clock: 'next-minute' },
  // -- /v2 allowed reads, one address, well within every budget.
  { name: 'v2 rate-limit report', method: 'GET', path: `${W}/rate-limit`, key: K.wsAdmin, ip: '10.1.0.1' },
  { name: 'v2 accounts list', method: 'GET', path: `${W}/accounts`, key: K.wsAdmin, ip: '10.1.0.1' },
  {
    name: 'v2 accounts filtered by tag',
    method: 'GET',
    path: `${W}/accounts?tag=priority`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  { name: 'v2 account', method: 'GET', path: `${W}/accounts/5000`, key: K.wsAdmin, ip: '10.1.0.1' },
  { name: 'v2 account absent', method: 'GET', path: `${W}/accounts/5999`, key: K.wsAdmin, ip: '10.1.0.1' },
  {
    name: 'v2 account of another workspace',
    method: 'GET',
    path: `${W}/accounts/5100`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  {
    name: 'v2 account id beyond int',
    method: 'GET',
    path: `${W}/accounts/99999999999`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  {
    name: 'v2 warmup settings',
    method: 'GET',
    path: `${W}/accounts/5000/warmup/settings`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  { name: 'v2 tags (Envelope A list)', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.1.0.1' },
  {
    name: 'v2 notifications unread',
    method: 'GET',
    path: `${W}/notifications?unreadOnly=true`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  { name: 'v2 members', method: 'GET', path: `${W}/members`, key: K.wsAdmin, ip: '10.1.0.1' },
  { name: 'v2 workspace', method: 'GET', path: W, key: K.wsAdmin, ip: '10.1.0.1' },
  { name: 'v2 billing plan', method: 'GET', path: `${W}/billing/plan`, key: K.wsAdmin, ip: '10.1.0.1' },
  {
    name: 'v2 unknown query parameter',
    method: 'GET',
    path: `${W}/accounts?colour=red`,
    key: K.wsAdmin,
    ip: '10.1.0.1',
  },
  { name: 'v2 HEAD counts as GET', method: 'HEAD', path: `${W}/tags`, key: K.wsAdmin, ip: '10.1.0.1' },
  // Workspace 101 holds no activity, so the rolling windows are empty whatever day the suite runs.
  {
    name: 'v2 analytics of a quiet workspace',
    method: 'GET',
    path: '/v2/workspaces/101/analytics/overview',
    key: K.wsOther,
    ip: '10.1.0.1',
  },
  { name: 'v2 personal key: workspaces', method: 'GET', path: '/v2/workspaces', key: K.ownerPk, ip: '10.1.0.1' },
  { name: 'v2 personal key: quotas', method: 'GET', path: '/v2/workspaces/quotas', key: K.ownerPk, ip: '10.1.0.1' },
  { name: 'v2 personal key: accounts', method: 'GET', path: `${W}/accounts`, key: K.editorPk, ip: '10.1.0.1' },
  { name: 'v2 viewer key reads', method: 'GET', path: `${W}/tags`, key: K.wsViewer, ip: '10.1.0.1' },
  { name: 'v2 rate-limit report after reads', method: 'GET', path: `${W}/rate-limit`, key: K.wsAdmin, ip: '10.1.0.1' },

  // -- /v2 writes.
  { clock: 'next-minute' },
  {
    name: 'v2 create tag',
    method: 'POST',
    path: `${W}/tags`,
    key: K.wsAdmin,
    body: { name: 'recorded' },
    ip: '10.2.0.1',
  },
  {
    name: 'v2 create tag again',
    method: 'POST',
    path: `${W}/tags`,
    key: K.wsAdmin,
    body: { name: 'recorded' },
    ip: '10.2.0.1',
  },
  { name: 'v2 create tag without name', method: 'POST', path: `${W}/tags`, key: K.wsAdmin, body: {}, ip: '10.2.0.1' },
  {
    name: 'v2 create tag with malformed JSON',
    method: 'POST',
    path: `${W}/tags`,
    key: K.wsAdmin,
    body: '{"name":',
    headers: json,
    ip: '10.2.0.1',
  },
  {
    name: 'v2 put account tags',
    method: 'PUT',
    path: `${W}/accounts/5001/tags`,
    key: K.wsAdmin,
    body: { tagIds: [1, 2] },
    ip: '10.2.0.1',
  },
  {
    name: 'v2 patch warmup settings',
    method: 'PATCH',
    path: `${W}/accounts/5000/warmup/settings`,
    key: K.wsAdmin,
    body: { replyRateMode: 'CUSTOM', replyRate: 30 },
    ip: '10.2.0.1',
  },
  { name: 'v2 pause warmup', method: 'POST', path: `${W}/accounts/5000/warmup/pause`, key: K.wsAdmin, ip: '10.2.0.1' },
  {
    name: 'v2 pause warmup again',
    method: 'POST',
    path: `${W}/accounts/5000/warmup/pause`,
    key: K.wsAdmin,
    ip: '10.2.0.1',
  },
  {
    name: 'v2 resume warmup',
    method: 'POST',
    path: `${W}/accounts/5000/warmup/resume`,
    key: K.wsAdmin,
    ip: '10.2.0.1',
  },
  { name: 'v2 read a notification', method: 'POST', path: `${W}/notifications/1/read`, key: K.wsAdmin, ip: '10.2.0.1' },
  {
    name: 'v2 bulk status',
    method: 'POST',
    path: `${W}/accounts/bulk-status`,
    key: K.wsAdmin,
    body: { accountIds: [5000, 5001, 5999] },
    ip: '10.2.0.1',
  },
  { name: 'v2 tags after writes', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.2.0.1' },
  {
    name: 'v2 editor personal key writes',
    method: 'POST',
    path: `${W}/tags`,
    key: K.editorPk,
    body: { name: 'by editor' },
    ip: '10.2.0.1',
  },

  // -- /v2 refusals before a key is resolved.
  { clock: 'next-minute' },
  { name: 'v2 no key', method: 'GET', path: `${W}/accounts`, ip: '10.3.0.1' },
  {
    name: 'v2 not Bearer',
    method: 'GET',
    path: `${W}/accounts`,
    headers: { authorization: `Basic ${K.wsAdmin}` },
    ip: '10.3.0.2',
  },
  { name: 'v2 unknown key', method: 'GET', path: `${W}/accounts`, key: X.unknown, ip: '10.3.0.3' },
  { name: 'v2 malformed key', method: 'GET', path: `${W}/accounts`, key: 'svc_ws_short', ip: '10.3.0.4' },
  { name: 'v2 revoked key', method: 'GET', path: `${W}/accounts`, key: X.revoked, ip: '10.3.0.9' },
  { name: 'v2 expired key', method: 'GET', path: `${W}/accounts`, key: X.expired, ip: '10.3.0.10' },
  { name: 'v2 partner key (wrong type)', method: 'GET', path: `${W}/accounts`, key: K.partner, ip: '10.3.0.5' },
  { name: 'v2 dot segment', method: 'GET', path: `${W}/%2e%2e/accounts`, key: K.wsAdmin, ip: '10.3.0.6' },
  { name: 'v2 empty segment', method: 'GET', path: `${W}//accounts`, key: K.wsAdmin, ip: '10.3.0.6' },
  { name: 'v2 encoded slash', method: 'GET', path: `${W}/accounts%2F5000`, key: K.wsAdmin, ip: '10.3.0.6' },
  { name: 'v2 leading zero id', method: 'GET', path: '/v2/workspaces/0100/accounts', key: K.wsAdmin, ip: '10.3.0.6' },
  { name: 'v2 body on GET', method: 'GET', path: `${W}/accounts`, key: K.wsAdmin, body: { a: 1 }, ip: '10.3.0.6' },
  {
    name: 'v2 body too large',
    method: 'POST',
    path: `${W}/tags`,
    key: K.wsAdmin,
    body: { name: 'x'.repeat(BODY_LIMIT) },
    ip: '10.3.0.7',
  },
  {
    name: 'v2 target too long',
    method: 'GET',
    path: `${W}/accounts?tag=${'a'.repeat(9000)}`,
    key: K.wsAdmin,
    ip: '10.3.0.8',
  },

  // -- /v2 refusals of a resolved key.
  { name: 'v2 unknown route', method: 'GET', path: `${W}/nothing-here`, key: K.wsAdmin, ip: '10.4.0.1' },
  { name: 'v2 method not allowed', method: 'DELETE', path: `${W}/tags`, key: K.wsAdmin, ip: '10.4.0.1' },
  { name: 'v2 method outside the API', method: 'TRACE', path: `${W}/tags`, key: K.wsAdmin, ip: '10.4.0.1' },
  {
    name: 'v2 method override is not believed',
    method: 'POST',
    path: `${W}/accounts/bulk-status`,
    key: K.wsViewer,
    headers: { 'x-http-method-override': 'DELETE' },
    body: { accountIds: [5000] },
    ip: '10.4.0.1',
  },
  {
    name: 'v2 personal key: quotas write',
    method: 'PATCH',
    path: '/v2/workspaces/quotas',
    key: K.ownerPk,
    body: { quotas: [{ workspaceId: 101, dailyWarmupBudget: 50 }] },
    ip: '10.4.0.1',
  },
  { name: 'v2 outside /v2/workspaces', method: 'GET', path: '/v2/elsewhere', key: K.wsAdmin, ip: '10.4.0.1' },
  {
    name: 'v2 other workspace (same org)',
    method: 'GET',
    path: '/v2/workspaces/101/accounts',
    key: K.wsAdmin,
    ip: '10.4.0.1',
  },
  { name: 'v2 other organization', method: 'GET', path: '/v2/workspaces/200/accounts', key: K.wsAdmin, ip: '10.4.0.1' },
  {
    name: 'v2 personal key, not a member',
    method: 'GET',
    path: '/v2/workspaces/101/accounts',
    key: K.editorPk,
    ip: '10.4.0.1',
  },
  { name: 'v2 missing scope', method: 'GET', path: `${W}/accounts`, key: K.wsNoScope, ip: '10.4.0.1' },
  {
    name: 'v2 role too low (viewer key writes)',
    method: 'POST',
    path: `${W}/tags`,
    key: K.wsViewer,
    body: { name: 'no' },
    ip: '10.4.0.1',
  },
  {
    name: 'v2 role too low (viewer user writes)',
    method: 'POST',
    path: `${W}/tags`,
    key: K.viewerPk,
    body: { name: 'no' },
    ip: '10.4.0.1',
  },
  { name: 'v2 role too low (billing)', method: 'GET', path: `${W}/billing/plan`, key: K.editorPk, ip: '10.4.0.1' },
  { name: 'v2 api access disabled', method: 'GET', path: '/v2/workspaces/300/accounts', key: K.org3Ws, ip: '10.4.0.1' },
  { name: 'v2 paused subscription', method: 'GET', path: '/v2/workspaces/700/accounts', key: X.paused, ip: '10.4.0.1' },
  {
    name: 'v2 rate-limit report, other workspace',
    method: 'GET',
    path: '/v2/workspaces/101/rate-limit',
    key: K.wsAdmin,
    ip: '10.4.0.1',
  },

  // -- The failed-authentication cooldown: five failures, then any keyed request of the address.
  { clock: 'next-minute' },
  {
    name: 'cooldown: five invalid keys',
    method: 'GET',
    path: `${W}/accounts`,
    key: X.unknown,
    ip: '10.5.0.1',
    repeat: 5,
  },
  { name: 'cooldown: a valid key is refused', method: 'GET', path: `${W}/accounts`, key: K.wsAdmin, ip: '10.5.0.1' },
  { name: 'cooldown: no key is still 150001', method: 'GET', path: `${W}/accounts`, ip: '10.5.0.1' },
  { name: 'cooldown: on /v1 too', method: 'GET', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.5.0.1' },
  { clock: 14 * 60_000 },
  { name: 'cooldown: near its end', method: 'GET', path: `${W}/accounts`, key: K.wsAdmin, ip: '10.5.0.1' },
  { clock: 60_000 },
  { name: 'cooldown: over', method: 'GET', path: `${W}/accounts`, key: K.wsAdmin, ip: '10.5.0.1' },

  // -- Per-key limits: Growth allows 20 reads, 10 writes, 4 bulk calls a minute.
  { clock: 'next-minute' },
  { name: 'key limit: 20 reads', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.6.0.1', repeat: 20 },
  { name: 'key limit: the 21st read', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.6.0.1' },
  { name: 'key limit: from another address', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.6.0.2' },
  {
    name: 'key limit: writes are their own bucket',
    method: 'POST',
    path: `${W}/notifications/read-all`,
    key: K.wsAdmin,
    ip: '10.6.0.1',
  },
  { name: 'key limit: report while exhausted', method: 'GET', path: `${W}/rate-limit`, key: K.wsAdmin, ip: '10.6.0.1' },
  {
    name: 'key limit: 4 bulk calls',
    method: 'POST',
    path: `${W}/accounts/bulk-status`,
    key: K.wsAdmin,
    body: { accountIds: [5000] },
    ip: '10.6.0.1',
    repeat: 4,
  },
  {
    name: 'key limit: the 5th bulk call',
    method: 'POST',
    path: `${W}/accounts/bulk-status`,
    key: K.wsAdmin,
    body: { accountIds: [5000] },
    ip: '10.6.0.1',
  },
  { clock: 30_000 },
  { name: 'key limit: half a minute later', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.6.0.1' },
  { clock: 'next-minute' },
  { name: 'key limit: next window', method: 'GET', path: `${W}/tags`, key: K.wsAdmin, ip: '10.6.0.1' },

  // -- Per-address limit: 100 a minute whatever the key.
  { clock: 'next-minute' },
  { name: 'address limit: 100 reads', method: 'GET', path: `${W}/tags`, key: X.wide, ip: '10.7.0.1', repeat: 100 },
  { name: 'address limit: the 101st', method: 'GET', path: `${W}/tags`, key: X.wide, ip: '10.7.0.1' },
  {
    name: 'address limit: another key, same address',
    method: 'GET',
    path: `${W}/tags`,
    key: K.wsViewer,
    ip: '10.7.0.1',
  },
  { name: 'address limit: the key elsewhere', method: 'GET', path: `${W}/tags`, key: X.wide, ip: '10.7.0.2' },
  {
    name: 'address limit: the IPv4-mapped spelling of the same address',
    method: 'GET',
    path: `${W}/tags`,
    key: X.wide,
    ip: '::ffff:10.7.0.1',
  },

  // -- Monthly quota: Quota Co may make 3 requests this month.
  { clock: 'next-minute' },
  {
    name: 'quota: three requests',
    method: 'GET',
    path: '/v2/workspaces/800/tags',
    key: X.quota,
    ip: '10.8.0.1',
    repeat: 3,
  },
  { name: 'quota: the fourth', method: 'GET', path: '/v2/workspaces/800/tags', key: X.quota, ip: '10.8.0.1' },
  { name: 'quota: report', method: 'GET', path: '/v2/workspaces/800/rate-limit', key: X.quota, ip: '10.8.0.1' },

  // -- /v1.
  { clock: 'next-minute' },
  { name: 'v1 rate-limit', method: 'GET', path: '/v1/rate-limit', apiKey: K.partner, ip: '10.9.0.1' },
  { name: 'v1 health', method: 'GET', path: '/v1/health', apiKey: K.partner, ip: '10.9.0.1' },
  { name: 'v1 email accounts', method: 'GET', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.9.0.1' },
  {
    name: 'v1 email accounts limit 1',
    method: 'GET',
    path: '/v1/email-accounts?limit=1',
    apiKey: K.partner,
    ip: '10.9.0.1',
  },
  {
    name: 'v1 email accounts bad limit',
    method: 'GET',
    path: '/v1/email-accounts?limit=0',
    apiKey: K.partner,
    ip: '10.9.0.1',
  },
  {
    name: 'v1 account status',
    method: 'GET',
    path: '/v1/email-accounts/5000/status',
    apiKey: K.partner,
    ip: '10.9.0.1',
  },
  {
    name: 'v1 account status absent',
    method: 'GET',
    path: '/v1/email-accounts/5999/status',
    apiKey: K.partner,
    ip: '10.9.0.1',
  },
  { name: 'v1 warmup settings', method: 'GET', path: '/v1/warmup-settings/5001', apiKey: K.partner, ip: '10.9.0.1' },
  {
    name: 'v1 patch warmup settings',
    method: 'PATCH',
    path: '/v1/warmup-settings/5001',
    apiKey: K.partner,
    body: { timeZone: 'Europe/Paris' },
    ip: '10.9.0.1',
  },
  {
    name: 'v1 patch warmup settings, bad zone',
    method: 'PATCH',
    path: '/v1/warmup-settings/5001',
    apiKey: K.partner,
    body: { timeZone: 'Mars/Olympus' },
    ip: '10.9.0.1',
  },
  { name: 'v1 warmup status', method: 'GET', path: '/v1/warmup-status/5000', apiKey: K.partner, ip: '10.9.0.1' },
  {
    name: 'v1 bulk status',
    method: 'POST',
    path: '/v1/email-accounts/bulk-status',
    apiKey: K.partner,
    body: { emailAccountIds: [5000, 5001] },
    ip: '10.9.0.1',
  },
  {
    name: 'v1 other organization account',
    method: 'GET',
    path: '/v1/email-accounts/6000/status',
    apiKey: K.partner,
    ip: '10.9.0.1',
  },
  { name: 'v1 rate-limit after calls', method: 'GET', path: '/v1/rate-limit', apiKey: K.partner, ip: '10.9.0.1' },

  // -- /v1 refusals.
  { clock: 'next-minute' },
  { name: 'v1 no key', method: 'GET', path: '/v1/email-accounts', ip: '10.10.0.1' },
  { name: 'v1 unknown key', method: 'GET', path: '/v1/email-accounts', apiKey: X.unknownPartner, ip: '10.10.0.2' },
  {
    name: 'v1 workspace key (wrong type)',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: K.wsAdmin,
    ip: '10.10.0.3',
  },
  {
    name: 'v1 Bearer instead of X-Api-Key',
    method: 'GET',
    path: '/v1/email-accounts',
    key: K.partner,
    ip: '10.10.0.4',
  },
  {
    name: 'v1 api access disabled',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: X.noAccessPartner,
    ip: '10.10.0.5',
  },
  {
    name: 'v1 paused subscription',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: X.pausedPartner,
    ip: '10.10.0.5',
  },
  { name: 'v1 unknown route', method: 'GET', path: '/v1/nothing-here', apiKey: K.partner, ip: '10.10.0.6' },
  { name: 'v1 method not allowed', method: 'PUT', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.10.0.6' },
  { name: 'v1 dot segment', method: 'GET', path: '/v1/%2e%2e/email-accounts', apiKey: K.partner, ip: '10.10.0.6' },
  {
    name: 'v1 target too long',
    method: 'GET',
    path: `/v1/email-accounts?limit=${'1'.repeat(9000)}`,
    apiKey: K.partner,
    ip: '10.10.0.6',
  },
  {
    name: 'v1 body too large',
    method: 'POST',
    path: '/v1/email-accounts/bulk-status',
    apiKey: K.partner,
    body: { emailAccountIds: [5000], pad: 'x'.repeat(BODY_LIMIT) },
    ip: '10.10.0.7',
  },
  {
    name: 'v1 cooldown: five invalid keys',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: X.unknownPartner,
    ip: '10.10.0.8',
    repeat: 5,
  },
  {
    name: 'v1 cooldown: a valid key is refused',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: K.partner,
    ip: '10.10.0.8',
  },
  { clock: 'next-minute' },
  {
    name: 'v1 partner limit: 20 calls',
    method: 'GET',
    path: '/v1/email-accounts',
    apiKey: K.partner,
    ip: '10.10.1.1',
    repeat: 20,
  },
  { name: 'v1 partner limit: the 21st', method: 'GET', path: '/v1/email-accounts', apiKey: K.partner, ip: '10.10.1.1' },
  {
    name: 'v1 partner limit: rate-limit route while exhausted',
    method: 'GET',
    path: '/v1/rate-limit',
    apiKey: K.partner,
    ip: '10.10.1.1',
  },

  // -- The gateway's own routes, CORS, and what is not an interface at all.
  { clock: 'next-minute' },
  { name: 'openapi v2', method: 'GET', path: '/v2/openapi.json', ip: '10.11.0.1' },
  { name: 'openapi v1', method: 'GET', path: '/v1/openapi.json', ip: '10.11.0.1' },
  {
    name: 'cors preflight, allowed origin',
    method: 'OPTIONS',
    path: `${W}/tags`,
    headers: {
      origin: CORS_ORIGIN,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization,content-type',
    },
    ip: '10.11.0.1',
  },
  {
    name: 'cors preflight, other origin',
    method: 'OPTIONS',
    path: `${W}/tags`,
    headers: { origin: 'https://evil.example.test', 'access-control-request-method': 'POST' },
    ip: '10.11.0.1',
  },
  {
    name: 'cors preflight on /v1',
    method: 'OPTIONS',
    path: '/v1/email-accounts',
    headers: {
      origin: CORS_ORIGIN,
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'x-api-key',
    },
    ip: '10.11.0.1',
  },
  {
    name: 'cors: allowed origin, answer',
    method: 'GET',
    path: `${W}/tags`,
    key: K.wsAdmin,
    headers: { origin: CORS_ORIGIN },
    ip: '10.11.0.1',
  },
  {
    name: 'cors: allowed origin, refusal',
    method: 'GET',
    path: `${W}/tags`,
    headers: { origin: CORS_ORIGIN },
    ip: '10.11.0.1',
  },
  {
    name: 'cors: other origin, answer',
    method: 'GET',
    path: `${W}/tags`,
    key: K.wsAdmin,
    headers: { origin: 'https://evil.example.test' },
    ip: '10.11.0.1',
  },
  { name: 'OPTIONS without preflight fields', method: 'OPTIONS', path: `${W}/tags`, key: K.wsAdmin, ip: '10.11.0.1' },
  { name: 'root path', method: 'GET', path: '/', ip: '10.11.0.1' },
  { name: 'outside both interfaces', method: 'GET', path: '/internal/organizations/1', ip: '10.11.0.1' },
  {
    name: 'request id echoed',
    method: 'GET',
    path: `${W}/tags`,
    key: K.wsAdmin,
    headers: { 'x-request-id': 'client-chosen-id-0001' },
    ip: '10.11.0.1',
  },
];
