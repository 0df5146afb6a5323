// What-if before a plan change: recorded traffic (the gateway's access log) replayed against
// candidate budgets and quotas, for any profile's interfaces (docs/profiles.md). Each request that
// reached the rate-limit step for real is counted again, in its minute and its month, against the
// candidate per-minute budget of its key's bucket and the candidate monthly quota of its organization
// (a rest profile's consumer); what would have been refused is reported per organization and key,
// beside what was refused for real.
//
// What the log can and cannot tell: it holds the time (when the answer was written, within the
// request's own duration of its arrival), the route template, the method, the status and code, and
// the organization and key ids. It holds no client address, so the address layer (the interface's
// `addressLimit`, unchanged by plans) is not replayed: a request refused by it for real stays counted
// as refused for real only. An interface with one fixed limit per key (`keyLimit`: /v1's 20 per key
// per minute) is not a plan's either and is not replayed; its requests do spend the organization's
// monthly quota.
import { budgetOf, monthlyQuotaOf, type LimitOverrides } from '../config/budgets.js';
import { monthStart, windowStart } from '../limits/types.js';
import { parsePlans, type Plans } from '../config/plans.js';
import { ConfigError, formatZodIssue } from '../config/errors.js';
import { restProfileSchema } from '../config/profile/schema.js';
import type { Bucket, RouteTable, Routes } from '../config/routes.js';
import type { InterfaceSpec, Profile } from '../config/profile/types.js';
import type { RefusalName } from '../config/profile/refusals.js';
import { WORKSPACE_INTERFACES } from '../config/profile/workspace.js';

/** One access log line's fields that matter here (src/ops/logger.ts). */
export interface AccessLine {
  time: number;
  method: string;
  route: string;
  status: number;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
}

/** Each organization's plan and overrides, and each key's overrides, as they would be. */
export interface ReplayLimits {
  plans: Plans;
  organizations: ReadonlyMap<number, { plan: string | null; limits: LimitOverrides }>;
  /** Key id -> its own overrides of the per-minute budgets (the organization's apply when absent). */
  keys: ReadonlyMap<number, Partial<Record<Bucket, number>>>;
}

export interface ReplayRow {
  organizationId: number;
  /** null: the organization's line (its monthly quota and its keys' totals). */
  keyId: number | null;
  plan: string;
  requests: number;
  /** Refused for real by a rate limit (any layer, 150005). */
  refusedReal: number;
  /** Would have been refused by the candidate per-minute budget of the key's bucket. */
  refusedPerMinute: number;
  /** Would have been refused by the candidate monthly quota (only requests the minute admitted). */
  refusedMonthly: number;
  /** Refused for real but admitted by the candidate limits (the key's layer and the quota). */
  admittedNow: number;
  /** ISO times of the first and last candidate refusal, when any. */
  firstRefusal: string | null;
  lastRefusal: string | null;
  /** Minutes (ISO, at the minute) with a candidate refusal, at most 10, then `moreMinutes`. */
  minutes: string[];
  moreMinutes: number;
}

export interface ReplayReport {
  from: string | null;
  to: string | null;
  lines: number;
  /** Lines that are not access lines of a keyed request (skipped). */
  skipped: number;
  rows: ReplayRow[];
}

/**
 * The candidate plans of `--plans`, in the format of the profile's own: config/plans.json's for the
 * workspace API, a rest profile's `plans` section (docs/profiles.md: budgets, `monthlyQuota`, `label`,
 * `limitMode`, and `free` required) for any other.
 */
export function candidatePlans(raw: unknown, file: string, profile: Pick<Profile, 'kind'>): Plans {
  if (profile.kind === 'workspace') return parsePlans(raw, file);
  const r = restProfileSchema.shape.plans.safeParse(raw);
  if (!r.success) throw new ConfigError(formatZodIssue(file, r.error.issues[0], raw));
  if (!Object.hasOwn(r.data, 'free'))
    throw new ConfigError(
      `${file} free: is required (a consumer whose plan is unknown gets it); add a plan named free`,
    );
  const plans: Plans = {};
  for (const [name, p] of Object.entries(r.data))
    plans[name] = {
      ...p,
      label: p.label ?? name,
      maxWarmupPerAccount: null,
      warmingMailboxCap: null,
      entitlements: [],
    };
  return plans;
}

/** The codes the workspace API's interfaces log for a rate-limit refusal (any layer: /v2's 150005, /v1's). */
const RATE_CODES = new Set(['150005', 'rate_limit_exceeded']);
/** Answers written after the rate-limit step: the request had spent its tokens. */
const AFTER_LIMIT_CODES = new Set(['bad_gateway', 'gateway_timeout', 'payload_too_large', 'request_timeout']);
/** The same answers by their refusal names, which a problem-details interface logs under its own codes. */
const RATE_REFUSALS: readonly RefusalName[] = ['rate_limited', 'quota_exhausted'];
const AFTER_LIMIT_REFUSALS: readonly RefusalName[] = [
  'bad_gateway',
  'gateway_timeout',
  'payload_too_large',
  'request_timeout',
];

/** How the lines of one interface are replayed: its table, its limits and the codes it logs. */
interface Replayed {
  prefix: string;
  table: RouteTable;
  /** The plan's buckets are replayed; false: one fixed limit per key (`keyLimit`), not a plan's. */
  buckets: boolean;
  rateCodes: ReadonlySet<string>;
  afterLimitCodes: ReadonlySet<string>;
}

function replayed(iface: InterfaceSpec, routes: Routes): Replayed {
  const table = routes.tables[iface.id];
  if (!table) throw new Error(`limits replay: no route table for the interface ${iface.id}`);
  const rateCodes = new Set(RATE_CODES);
  const afterLimitCodes = new Set(AFTER_LIMIT_CODES);
  if (iface.errors.format === 'problem') {
    for (const n of RATE_REFUSALS) rateCodes.add(iface.errors.problems[n].code);
    for (const n of AFTER_LIMIT_REFUSALS) afterLimitCodes.add(iface.errors.problems[n].code);
  }
  return { prefix: iface.prefix, table, buckets: iface.keyLimit === null, rateCodes, afterLimitCodes };
}

/**
 * Whether a request reached the rate-limit step (refusals before it spend nothing; docs/decisions.md
 * section 3): forwarded, refused by a limit, or failed after it. `codes` are the interface's.
 */
export function reachedLimits(
  line: AccessLine,
  codes: Pick<Replayed, 'rateCodes' | 'afterLimitCodes'> = {
    rateCodes: RATE_CODES,
    afterLimitCodes: AFTER_LIMIT_CODES,
  },
): boolean {
  return line.code === null || codes.rateCodes.has(line.code) || codes.afterLimitCodes.has(line.code);
}

/** An access log line, or null when the text is not one (other log lines, unkeyed requests). */
export function parseAccessLine(text: string): AccessLine | null {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text);
  } catch {
    return null;
  }
  if (o === null || typeof o !== 'object' || o.msg !== 'request') return null;
  const time = typeof o.time === 'number' ? o.time : typeof o.time === 'string' ? Date.parse(o.time) : NaN;
  if (
    !Number.isFinite(time) ||
    typeof o.route !== 'string' ||
    typeof o.method !== 'string' ||
    typeof o.status !== 'number'
  )
    return null;
  const id = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) ? v : null);
  return {
    time,
    method: o.method,
    route: o.route,
    status: o.status,
    code: typeof o.code === 'string' ? o.code : null,
    organizationId: id(o.organizationId),
    keyId: id(o.keyId),
  };
}

interface Tally {
  row: ReplayRow;
  refusalMinutes: Set<number>;
}

/**
 * Replay `lines` (in any order; sorted by time here) against `limits`. `interfaces` are the profile's in
 * force (the workspace API's by default), each line going to the one whose prefix its route starts with;
 * a line of no interface's is counted as skipped.
 */
export function replay(
  lines: AccessLine[],
  limits: ReplayLimits,
  routes: Routes,
  skipped = 0,
  interfaces: readonly InterfaceSpec[] = WORKSPACE_INTERFACES,
): ReplayReport {
  const sorted = [...lines].sort((a, b) => a.time - b.time);
  const byPrefix = interfaces.map((i) => replayed(i, routes));
  const interfaceOf = (route: string) =>
    byPrefix.find((i) => route === i.prefix || route.startsWith(i.prefix + '/')) ?? null;
  // The log holds route templates: each {param} becomes a value every parameter accepts (`1`).
  // null: a route the gateway answers itself (the rate-limit reports), which spends nothing.
  const bucketOf = (method: string, route: string, table: RouteTable): Bucket | null | undefined => {
    const m = table.match(method, route.replace(/\{[^}/]*\}/g, '1'));
    if (!m) return undefined;
    return m.route.gateway ? null : m.route.bucket;
  };

  const minute = new Map<string, number>(); // key:bucket:window -> spent
  const month = new Map<string, number>(); // org:month -> admitted
  const tallies = new Map<string, Tally>();
  const tally = (org: number, key: number | null): Tally => {
    const id = `${org}:${key ?? ''}`;
    let t = tallies.get(id);
    if (!t) {
      const o = limits.organizations.get(org);
      const plan = o?.plan ?? null;
      t = {
        row: {
          organizationId: org,
          keyId: key,
          plan: plan !== null && Object.hasOwn(limits.plans, plan) ? plan : 'free',
          requests: 0,
          refusedReal: 0,
          refusedPerMinute: 0,
          refusedMonthly: 0,
          admittedNow: 0,
          firstRefusal: null,
          lastRefusal: null,
          minutes: [],
          moreMinutes: 0,
        },
        refusalMinutes: new Set(),
      };
      tallies.set(id, t);
    }
    return t;
  };
  const refusedAt = (t: Tally, time: number) => {
    const iso = new Date(time).toISOString();
    t.row.firstRefusal ??= iso;
    t.row.lastRefusal = iso;
    const m = windowStart(time);
    if (!t.refusalMinutes.has(m)) {
      t.refusalMinutes.add(m);
      if (t.row.minutes.length < 10) t.row.minutes.push(new Date(m).toISOString().slice(0, 16) + 'Z');
      else t.row.moreMinutes++;
    }
  };

  let foreign = 0;
  for (const line of sorted) {
    const iface = interfaceOf(line.route);
    if (!iface) {
      // A route of another profile's interface; `unmatched` (no route) never reached the limits anyway.
      if (line.route.startsWith('/')) foreign++;
      continue;
    }
    if (line.organizationId === null || line.keyId === null || !reachedLimits(line, iface)) continue;
    const routeBucket = bucketOf(line.method, line.route, iface.table);
    if (routeBucket === null) continue;
    const org = limits.organizations.get(line.organizationId) ?? { plan: null, limits: NONE };
    const keyT = tally(line.organizationId, line.keyId);
    const orgT = tally(line.organizationId, null);
    const real = iface.rateCodes.has(line.code ?? '');
    for (const t of [keyT, orgT]) {
      t.row.requests++;
      if (real) t.row.refusedReal++;
    }
    let refused = false;
    if (iface.buckets) {
      const bucket = routeBucket ?? (line.method === 'GET' || line.method === 'HEAD' ? 'read' : 'write');
      const own = limits.keys.get(line.keyId)?.[bucket];
      const budget = own ?? budgetOf(limits.plans, org.plan, org.limits, bucket);
      const id = `${line.keyId}:${bucket}:${windowStart(line.time)}`;
      const spent = (minute.get(id) ?? 0) + 1;
      minute.set(id, spent);
      if (spent > budget) {
        refused = true;
        for (const t of [keyT, orgT]) {
          t.row.refusedPerMinute++;
          refusedAt(t, line.time);
        }
      }
    }
    const quota = monthlyQuotaOf(limits.plans, org.plan, org.limits);
    if (!refused && quota !== null) {
      const id = `${line.organizationId}:${monthStart(line.time)}`;
      const used = month.get(id) ?? 0;
      if (used >= quota) {
        refused = true;
        for (const t of [keyT, orgT]) {
          t.row.refusedMonthly++;
          refusedAt(t, line.time);
        }
      } else month.set(id, used + 1);
    }
    if (real && !refused) for (const t of [keyT, orgT]) t.row.admittedNow++;
  }
  const rows = [...tallies.values()]
    .map((t) => t.row)
    .sort((a, b) => a.organizationId - b.organizationId || (a.keyId ?? -1) - (b.keyId ?? -1));
  return {
    from: sorted.length ? new Date(sorted[0].time).toISOString() : null,
    to: sorted.length ? new Date(sorted[sorted.length - 1].time).toISOString() : null,
    lines: lines.length - foreign,
    skipped: skipped + foreign,
    rows,
  };
}

const NONE: LimitOverrides = { read: null, write: null, bulk: null, monthlyQuota: null };
