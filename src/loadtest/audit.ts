// The exactness audit of a load test, from the answers alone: what the gateway announced in its headers
// must hold for what it did. Per key, bucket and window (and per client address and window for the
// address layer):
// - admitted answers never exceed the budget the headers announce;
// - X-RateLimit-Remaining counts down: each admitted answer of a window carries its own value, between 0
//   and limit - 1 (two answers with one value means one token was granted twice);
// - an organization's monthly quota (the `"month"` policy of RateLimit-Policy and RateLimit) is audited
//   the same way, per key and month;
// - every admitted answer carries the rate-limit fields (an answer without them announces no budget, and
//   a gateway that forgot to count it would hide there);
// - every rate-limit refusal carries Retry-After, and waiting it out reaches a fresh window: the answer's
//   arrival plus Retry-After is not before the window's reset, and the first request the load test sent
//   after honouring it was answered from a later window.
// Other clients spending the same keys during the run only leave gaps in the countdown, never duplicates,
// so the audit stays sound in front of live traffic. A key given twice is one subject (run.ts gives its
// answers the index of its first occurrence): two tallies of one budget would each stay within it.
// Under a rest profile (./profile.ts) the refusals are the profile's codes, and each admitted answer is
// also held to the profile: the header families it turns on and only those, its address layer (with
// its limit) or none, and the bucket of the route's table in RateLimit-Policy.
import type { HeaderFamilies } from '../config/profile/types.js';

/** What the audit needs of one answer. */
export interface AuditAnswer {
  /** Index of the key in the run's key list; -1 for none. */
  key: number;
  /** The client address the request claimed (X-Forwarded-For), or '' for the load test's own. */
  address: string;
  /** When the answer's head arrived, epoch ms. */
  at: number;
  status: number;
  /** The error code of the body (Envelope A errorCode, Envelope B or /v1 code), or null. */
  code: string | null;
  /** The key layer's policy name (`read`, `write`, `bulk`, `partner`), from RateLimit-Policy. */
  bucket: string | null;
  limit: number | null;
  remaining: number | null;
  /** The key layer's window end, unix seconds (X-RateLimit-Reset). */
  reset: number | null;
  ipLimit: number | null;
  ipRemaining: number | null;
  retryAfter: number | null;
  /** The organization's monthly quota, when the answer announced one (`"month"` policy); reset: the month's end, unix seconds. */
  month?: { limit: number; remaining: number; reset: number } | null;
  /** This request was the first sent for its key and bucket after honouring a Retry-After. */
  afterRetry?: { reset: number };
  /** The families of rate-limit fields the answer carried (read under a profile). */
  families?: HeaderFamilies;
  /** The bucket of the request's route in the profile's table (null: no route, or the status route). */
  routeBucket?: string | null;
}

/** The codes with which a gateway refuses, by what they mean to the audit. */
export interface RefusalCodes {
  /** Refusals before forwarding: such an answer was not admitted. */
  refusals: ReadonlySet<string>;
  /** A limit's refusal (key, address or month). */
  rateLimited: ReadonlySet<string>;
  /** The refusal of a path outside every route, answered before any layer. */
  notFound: string;
}

/** What the audit holds the answers of a rest profile's gateway to (./profile.ts). */
export interface AuditProfile {
  codes: RefusalCodes;
  families: HeaderFamilies;
  addressLimit: number | null;
}

/** Codes with which the gateway refuses before forwarding: these answers were not admitted. */
const REFUSALS = new Set([
  '150001',
  '150002',
  '150003',
  '150004',
  '150005',
  '150006',
  '150007',
  '040006',
  'invalid_request',
  'payload_too_large',
  'uri_too_long',
  'unauthenticated',
  'rate_limiter_unavailable',
  'access_store_unavailable',
  'invalid_api_key',
  'missing_api_key',
  'rate_limit_exceeded',
  'too_many_failed_attempts',
]);
const RATE_LIMITED = new Set(['150005', 'rate_limit_exceeded']);
/** The workspace API's codes (/v2's Envelope A and B, /v1's). */
export const WORKSPACE_CODES: RefusalCodes = { refusals: REFUSALS, rateLimited: RATE_LIMITED, notFound: 'not_found' };

/** The answer spent a token and was let through (forwarded, or answered by the gateway as the route itself). */
export function admitted(a: AuditAnswer, codes: RefusalCodes = WORKSPACE_CODES): boolean {
  if (a.status === 429) return false;
  // A path outside every route: keygate answers 404 not_found before any layer, without rate-limit fields.
  if (a.status === 404 && a.code === codes.notFound && a.limit === null && a.ipLimit === null) return false;
  return a.code === null || !codes.refusals.has(a.code);
}

export const isRateLimited = (a: AuditAnswer, codes: RefusalCodes = WORKSPACE_CODES) =>
  a.status === 429 && a.code !== null && codes.rateLimited.has(a.code);

export interface WindowAudit {
  layer: 'key' | 'address' | 'month';
  /** `key <n> read`, `key <n> month` or `address 10.0.0.1`. */
  subject: string;
  /** The window's end, unix seconds. */
  reset: number;
  limit: number;
  admitted: number;
  refused: number;
  /** Remaining values announced twice among admitted answers. */
  duplicates: number[];
  /** Remaining values outside [0, limit - 1] on admitted answers. */
  outOfRange: number[];
}

export interface Violation {
  kind:
    | 'over-budget'
    | 'missing-fields'
    | 'duplicate-remaining'
    | 'remaining-out-of-range'
    | 'missing-retry-after'
    | 'retry-after-too-short'
    | 'retry-same-window'
    | 'profile-fields'
    | 'address-layer'
    | 'wrong-bucket';
  subject: string;
  reset: number | null;
  detail: string;
}

export interface AuditResult {
  ok: boolean;
  windows: WindowAudit[];
  violations: Violation[];
  /** Rate-limit refusals seen, and how many of them were followed by a request after Retry-After. */
  refusals: number;
  retriesHonoured: number;
  retriesInFreshWindow: number;
}

interface Tally {
  layer: WindowAudit['layer'];
  subject: string;
  reset: number;
  limit: number;
  admitted: number;
  refused: number;
  seen: Set<number>;
  duplicates: number[];
  outOfRange: number[];
}

/** The windows of a run by layer, subject and reset, each counting its answers. */
class Tallies {
  private readonly byId = new Map<string, Tally>();

  /** The window's tally (made at its first answer); its limit is the largest announced. */
  of(layer: Tally['layer'], subject: string, reset: number, limit: number): Tally {
    const id = `${layer}\u0000${subject}\u0000${reset}`;
    let t = this.byId.get(id);
    if (!t)
      this.byId.set(
        id,
        (t = {
          layer,
          subject,
          reset,
          limit,
          admitted: 0,
          refused: 0,
          seen: new Set(),
          duplicates: [],
          outOfRange: [],
        }),
      );
    t.limit = Math.max(t.limit, limit);
    return t;
  }

  values(): IterableIterator<Tally> {
    return this.byId.values();
  }
}

function count(t: Tally, ok: boolean, remaining: number | null): void {
  if (!ok) return void t.refused++;
  t.admitted++;
  if (remaining === null) return;
  if (t.seen.has(remaining)) t.duplicates.push(remaining);
  t.seen.add(remaining);
  if (remaining < 0 || remaining > t.limit - 1) t.outOfRange.push(remaining);
}

/** A rate-limit refusal without Retry-After, or with one that ends before the window resets; else null. */
function refusalViolation(a: AuditAnswer, subject: string, clockSlackMs: number): Violation | null {
  if (a.retryAfter === null)
    return {
      kind: 'missing-retry-after',
      subject,
      reset: a.reset,
      detail: `a ${a.status} ${a.code} without Retry-After`,
    };
  if (a.reset !== null && a.at + a.retryAfter * 1000 + clockSlackMs < a.reset * 1000)
    return {
      kind: 'retry-after-too-short',
      subject,
      reset: a.reset,
      detail: `Retry-After ${a.retryAfter} s at ${new Date(a.at).toISOString()} ends before the window resets`,
    };
  return null;
}

/** The windows as the result shows them, each's violations appended to `violations` in window order. */
function windowsOf(tallies: Iterable<Tally>, violations: Violation[]): WindowAudit[] {
  const windows: WindowAudit[] = [];
  for (const t of tallies) {
    windows.push({
      layer: t.layer,
      subject: t.subject,
      reset: t.reset,
      limit: t.limit,
      admitted: t.admitted,
      refused: t.refused,
      duplicates: t.duplicates,
      outOfRange: t.outOfRange,
    });
    if (t.admitted > t.limit)
      violations.push({
        kind: 'over-budget',
        subject: t.subject,
        reset: t.reset,
        detail: `${t.admitted} admitted of a budget of ${t.limit}`,
      });
    if (t.duplicates.length)
      violations.push({
        kind: 'duplicate-remaining',
        subject: t.subject,
        reset: t.reset,
        detail: `Remaining ${[...new Set(t.duplicates)].slice(0, 5).join(', ')} announced more than once`,
      });
    if (t.outOfRange.length)
      violations.push({
        kind: 'remaining-out-of-range',
        subject: t.subject,
        reset: t.reset,
        detail: `Remaining ${t.outOfRange.slice(0, 5).join(', ')} outside 0..${t.limit - 1}`,
      });
  }
  windows.sort((x, y) => x.reset - y.reset || x.subject.localeCompare(y.subject));
  return windows;
}

/**
 * Audit the answers of a run; `keyName(i)` names key i in the findings (never its secret). `profile`: the
 * rest profile the gateway serves (its codes, families and address layer), else the workspace API.
 */
export function audit(
  answers: Iterable<AuditAnswer>,
  keyName: (i: number) => string = (i) => `key ${i + 1}`,
  clockSlackMs = 250,
  profile: AuditProfile | null = null,
): AuditResult {
  const codes = profile?.codes ?? WORKSPACE_CODES;
  const unlike = new ProfileFindings();
  const tallies = new Tallies();
  const violations: Violation[] = [];
  let refusals = 0;
  let retriesHonoured = 0;
  let retriesInFreshWindow = 0;
  const unannounced = new Map<string, number>();

  for (const a of answers) {
    const spent = admitted(a, codes) || isRateLimited(a, codes);
    const ok = admitted(a, codes);
    const keySubject = a.key >= 0 ? `${keyName(a.key)} ${a.bucket ?? 'bucket'}` : null;
    if (spent && keySubject && a.limit !== null && a.reset !== null)
      count(tallies.of('key', keySubject, a.reset, a.limit), ok, a.remaining);
    if (ok && a.key >= 0 && (a.limit === null || a.remaining === null || a.reset === null || a.bucket === null)) {
      const subject = keyName(a.key);
      unannounced.set(subject, (unannounced.get(subject) ?? 0) + 1);
    }
    if (spent && a.key >= 0 && a.month)
      count(tallies.of('month', `${keyName(a.key)} month`, a.month.reset, a.month.limit), ok, a.month.remaining);
    // The address layer has no reset header of its own: it shares the key layer's minute.
    if (spent && a.ipLimit !== null && a.reset !== null)
      count(tallies.of('address', `address ${a.address || 'of the load test'}`, a.reset, a.ipLimit), ok, a.ipRemaining);

    if (ok && a.key >= 0 && profile) unlike.check(a, keyName(a.key), profile);
    if (isRateLimited(a, codes)) {
      refusals++;
      const v = refusalViolation(a, keySubject ?? `address ${a.address || 'of the load test'}`, clockSlackMs);
      if (v) violations.push(v);
    }
    if (a.afterRetry) {
      retriesHonoured++;
      if (a.reset !== null && a.reset > a.afterRetry.reset) retriesInFreshWindow++;
      else if (a.reset !== null) {
        violations.push({
          kind: 'retry-same-window',
          subject: keySubject ?? 'request',
          reset: a.reset,
          detail: `after honouring Retry-After the answer still came from the window ending ${a.reset}`,
        });
      }
    }
  }

  for (const [subject, n] of unannounced)
    violations.push({
      kind: 'missing-fields',
      subject,
      reset: null,
      detail: `${n} admitted answer(s) without rate-limit fields (X-RateLimit-Limit, -Remaining, -Reset and a RateLimit-Policy bucket)`,
    });

  violations.push(...unlike.violations());
  const windows = windowsOf(tallies.values(), violations);
  return { ok: violations.length === 0, windows, violations, refusals, retriesHonoured, retriesInFreshWindow };
}

/** How the admitted answers differ from what the profile announces, counted per key and finding. */
class ProfileFindings {
  private readonly found = new Map<string, { kind: Violation['kind']; subject: string; detail: string; n: number }>();

  private add(kind: Violation['kind'], subject: string, detail: string): void {
    const id = `${kind}\u0000${subject}\u0000${detail}`;
    const f = this.found.get(id);
    if (f) f.n++;
    else this.found.set(id, { kind, subject, detail, n: 1 });
  }

  check(a: AuditAnswer, subject: string, p: AuditProfile): void {
    const carried = a.families ?? { xRateLimit: false, ietf: false };
    for (const [family, name] of [
      ['xRateLimit', 'X-RateLimit-*'],
      ['ietf', 'RateLimit-Policy and RateLimit'],
    ] as const) {
      if (p.families[family] && !carried[family])
        this.add('profile-fields', subject, `without ${name}, a family the profile turns on`);
      if (!p.families[family] && carried[family])
        this.add('profile-fields', subject, `with ${name}, a family the profile turns off`);
    }
    if (p.addressLimit === null && a.ipLimit !== null)
      this.add('address-layer', subject, 'announcing an address layer the profile has none of');
    else if (p.addressLimit !== null && a.ipLimit === null)
      this.add('address-layer', subject, `without the address layer (${p.addressLimit} per minute)`);
    else if (p.addressLimit !== null && a.ipLimit !== p.addressLimit)
      this.add(
        'address-layer',
        subject,
        `announcing an address limit of ${a.ipLimit}, not the profile's ${p.addressLimit}`,
      );
    if (a.routeBucket && a.bucket !== null && a.bucket !== a.routeBucket)
      this.add(
        'wrong-bucket',
        subject,
        `RateLimit-Policy names "${a.bucket}" on a route of the ${a.routeBucket} bucket`,
      );
  }

  violations(): Violation[] {
    return [...this.found.values()].map((f) => ({
      kind: f.kind,
      subject: f.subject,
      reset: null,
      detail: `${f.n} admitted answer(s) ${f.detail}`,
    }));
  }
}
