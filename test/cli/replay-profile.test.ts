// `limits replay` (src/cli/replay.ts) under a rest profile: the access lines of its interface replayed
// against the profile's route table and candidate plans in the profile's own format, its own codes for
// a limit's refusal and a failed upstream recognized, its status route and earlier refusals spending
// nothing; the workspace API's interfaces replayed as before.
import { describe, expect, it } from 'vitest';
import { candidatePlans, parseAccessLine, replay, type ReplayLimits } from '../../src/cli/replay.js';
import { loadProfile } from '../../src/config/profile/load.js';
import { workspaceProfile } from '../../src/config/profile/workspace.js';
import { loadRoutes } from '../../src/config/routes.js';
import { loadPlans } from '../../src/config/plans.js';
import type { Profile } from '../../src/config/profile/types.js';

const shop = loadProfile({
  PROFILE_FILE: 'test/fixtures/profiles/d-shop.yaml',
  ROUTES_FILE: 'config/routes.json',
  PLANS_FILE: 'config/plans.json',
});
/** 2026-12-05 10:00:05 UTC and 10:01:05, one minute apart; a request every 100 ms within each. */
const MINUTE_A = Date.UTC(2026, 11, 5, 10, 0, 5);
const MINUTE_B = MINUTE_A + 60_000;

/** An access line as the gateway writes it (src/ops/logger.ts accessLogWriter). */
function line(o: {
  time: number;
  method?: string;
  route: string;
  status?: number;
  code?: string | null;
  key?: number | null;
}): string {
  return JSON.stringify({
    level: 30,
    time: o.time,
    svc: 'keygate',
    requestId: `r${o.time}`,
    method: o.method ?? 'GET',
    route: o.route,
    status: o.status ?? 200,
    code: o.code ?? null,
    ms: 1.2,
    organizationId: o.key === null ? null : 3,
    keyId: o.key === null ? null : (o.key ?? 70),
    msg: 'request',
  });
}

/** The recorded traffic of consumer 3 (plan free: 20 reads, 10 writes a minute) and its keys 70 and 71. */
function traffic(): string[] {
  const out: string[] = [];
  let t = MINUTE_A;
  // Key 70: 25 reads in minute A, the last 5 refused for real under the profile's own code.
  for (let i = 0; i < 25; i++)
    out.push(
      line({
        time: (t += 100),
        route: '/api/orders/{orderId}',
        ...(i >= 20 ? { status: 429, code: 'slow-down' } : {}),
      }),
    );
  // Key 71: 4 writes, one of them failed upstream after spending (bad-gateway), in minute A.
  for (let i = 0; i < 4; i++)
    out.push(
      line({
        time: (t += 100),
        method: 'POST',
        route: '/api/orders',
        key: 71,
        ...(i === 3 ? { status: 502, code: 'bad-gateway' } : {}),
      }),
    );
  // Spending nothing: a missing scope, an unknown key (no consumer), the status route.
  out.push(line({ time: (t += 100), route: '/api/products/{sku}', status: 403, code: 'missing-scope' }));
  out.push(line({ time: (t += 100), route: '/api/orders', status: 401, code: 'invalid-key', key: null }));
  out.push(line({ time: (t += 100), route: '/api/rate-limit' }));
  // Another profile's interface: not this one's to replay.
  out.push(line({ time: (t += 100), route: '/v2/workspaces/{workspaceId}/tags' }));
  // Key 70 in minute B: 3 reads.
  t = MINUTE_B;
  for (let i = 0; i < 3; i++) out.push(line({ time: (t += 100), route: '/api/orders' }));
  out.push('a line that is not JSON');
  return out;
}

function run(
  profile: Profile,
  rawPlans: unknown,
  texts = traffic(),
  organizations: ReplayLimits['organizations'] = new Map(),
) {
  const parsed = texts.map(parseAccessLine);
  const lines = parsed.filter((l) => l !== null && l.organizationId !== null && l.keyId !== null);
  const limits: ReplayLimits = {
    plans: candidatePlans(rawPlans, 'candidate.yaml', profile),
    organizations,
    keys: new Map(),
  };
  return replay(
    lines as NonNullable<(typeof parsed)[number]>[],
    limits,
    profile.routes,
    texts.length - lines.length,
    profile.interfaces,
  );
}
const row = (r: ReturnType<typeof run>, keyId: number | null) =>
  r.rows.find((x) => x.organizationId === 3 && x.keyId === keyId)!;

describe('limits replay under a rest profile', () => {
  it("the profile's plans as they are: its own refusals for real, nothing more", () => {
    const r = run(shop, { free: { read: 20, write: 10, bulk: 2 } });
    // 25 + 4 + 3 spent; the missing scope, the status route and the other interface's line not replayed.
    expect(row(r, null)).toMatchObject({
      plan: 'free',
      requests: 32,
      refusedReal: 5,
      refusedPerMinute: 5,
      admittedNow: 0,
    });
    expect(row(r, 71)).toMatchObject({ requests: 4, refusedReal: 0, refusedPerMinute: 0 });
    expect(r.skipped).toBe(3); // the unkeyed 401, the line that is not JSON, the /v2 line
    expect(r.lines).toBe(34);
  });

  it('a lower read budget refuses more reads, in their minute; the writes have their own bucket', () => {
    const r = run(shop, { free: { read: 10, write: 3, bulk: 2 } });
    const reads = row(r, 70);
    expect(reads).toMatchObject({ requests: 28, refusedReal: 5, refusedPerMinute: 15, admittedNow: 0 });
    expect(reads.minutes).toEqual(['2026-12-05T10:00Z']);
    // The failed upstream spent its token: the fourth write is over a budget of 3.
    expect(row(r, 71)).toMatchObject({ requests: 4, refusedPerMinute: 1 });
  });

  it("a higher budget admits what was refused for real; a consumer's monthly quota refuses after it is spent", () => {
    expect(row(run(shop, { free: { read: 30, write: 10, bulk: 2 } }), 70)).toMatchObject({
      refusedPerMinute: 0,
      admittedNow: 5,
    });
    const r = run(shop, { free: { read: 30, write: 10, bulk: 2, monthlyQuota: 20 } });
    expect(row(r, null)).toMatchObject({ requests: 32, refusedMonthly: 12 });
  });

  it("a consumer on another plan gets that plan's candidate budgets", () => {
    const orgs = new Map([[3, { plan: 'pro', limits: { read: null, write: null, bulk: null, monthlyQuota: null } }]]);
    const r = run(
      shop,
      { free: { read: 1, write: 1, bulk: 1 }, pro: { read: 12, write: 10, bulk: 2 } },
      traffic(),
      orgs,
    );
    expect(row(r, 70)).toMatchObject({ plan: 'pro', refusedPerMinute: 13 });
  });

  it("the candidate plans are read in the profile's format, a mistake named", () => {
    expect(() => candidatePlans(loadRawPlans(), 'config/plans.json', shop)).toThrow(
      /^config\/plans\.json free\.maxWarmupPerAccount: unknown field$/,
    );
    expect(() => candidatePlans({ pro: { read: 1, write: 1, bulk: 1 } }, 'candidate.yaml', shop)).toThrow(
      /^candidate\.yaml free: is required/,
    );
    expect(() => candidatePlans({ free: { read: 0, write: 1, bulk: 1 } }, 'candidate.yaml', shop)).toThrow(
      /free\.read/,
    );
    expect(candidatePlans({ free: { read: 5, write: 1, bulk: 1, label: 'Free' } }, 'c', shop).free).toMatchObject({
      read: 5,
      label: 'Free',
    });
  });

  it("the workspace API's interfaces as before: /v2 by bucket, /v1's one layer per key not replayed, a rest line skipped", () => {
    const ws = workspaceProfile(loadRoutes('config/routes.json'), loadPlans('config/plans.json'));
    const texts: string[] = [];
    let t = MINUTE_A;
    for (let i = 0; i < 12; i++) texts.push(line({ time: (t += 100), route: '/v2/workspaces/{workspaceId}/tags' }));
    for (let i = 0; i < 12; i++) texts.push(line({ time: (t += 100), route: '/v1/email-accounts', key: 71 }));
    texts.push(line({ time: (t += 100), route: '/api/orders' }));
    const plans = { ...loadRawPlans(), free: { ...loadRawPlans().free, read: 5 } };
    const r = run(ws, plans, texts);
    expect(row(r, 70)).toMatchObject({ requests: 12, refusedPerMinute: 7 });
    expect(row(r, 71)).toMatchObject({ requests: 12, refusedPerMinute: 0 });
    expect(r.skipped).toBe(1);
    // And the default interfaces are the workspace API's.
    const parsed = texts.map(parseAccessLine).filter((l) => l !== null);
    const limits = { plans: candidatePlans(plans, 'p', ws), organizations: new Map(), keys: new Map() };
    expect(replay(parsed, limits, ws.routes)).toEqual(r);
  });
});

function loadRawPlans(): Record<string, Record<string, unknown>> {
  return JSON.parse(JSON.stringify(loadPlans('config/plans.json')));
}
