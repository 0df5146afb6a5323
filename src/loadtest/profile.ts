// What the load test takes from a rest profile (`--profile FILE`, docs/loadtest.md): how a key travels
// (its field, Bearer or not), the default route (the first forwarded GET of its table), the codes of the
// gateway's own refusals (RFC 9457 problem details with the profile's type and code), each route's
// bucket from its table, and what the audit holds the answers to: the header families the profile turns
// on and off, and its address layer.
import { loadProfile } from '../config/profile/load.js';
import type { InterfaceSpec, KeyPresentation } from '../config/profile/types.js';
import type { RefusalName } from '../config/profile/refusals.js';
import type { RouteTable } from '../config/routes.js';
import { UsageError } from '../cli/args.js';
import type { AuditProfile } from './audit.js';

/** The refusals the gateway answers before forwarding: such an answer was not admitted. */
const BEFORE_FORWARDING: readonly RefusalName[] = [
  'missing_key',
  'invalid_key',
  'too_many_failures',
  'access_disabled',
  'subscription_paused',
  'insufficient_scope',
  'rate_limited',
  'quota_exhausted',
  'invalid_request',
  'payload_too_large',
  'uri_too_long',
  'limiter_unavailable',
  'access_store_unavailable',
];

/** The interface of a profile the load test aims at. */
export interface ProfileTarget extends AuditProfile {
  /** The profile's name, for the report. */
  name: string;
  key: KeyPresentation;
  /** Each code's problem type: a problem+json answer is the gateway's own only with its code's type. */
  typeOf: ReadonlyMap<string, string>;
  /** A route's bucket by its table (null: no route, or the gateway's status route, which spends nothing). */
  bucketOf(method: string, path: string): string | null;
  /** A request path of the table's first forwarded GET route, its ids made concrete. */
  defaultRoute: string | null;
}

export function profileTarget(iface: InterfaceSpec, table: RouteTable, name: string): ProfileTarget {
  if (iface.errors.format !== 'problem')
    throw new UsageError(`--profile: the interface ${iface.id} is not a rest profile's`);
  const problems = iface.errors.problems;
  const codes = (names: readonly RefusalName[]) => new Set(names.map((n) => problems[n].code));
  const first = table.all.find((r) => r.method === 'GET' && !r.gateway);
  return {
    name,
    key: iface.key,
    families: iface.headers,
    addressLimit: iface.addressLimit,
    codes: {
      refusals: codes(BEFORE_FORWARDING),
      rateLimited: codes(['rate_limited', 'quota_exhausted']),
      notFound: problems.not_found.code,
    },
    typeOf: new Map(Object.values(problems).map((p) => [p.code, p.type])),
    bucketOf(method, path) {
      const m = table.match(method, path.split('?')[0]);
      return m && !m.route.gateway ? m.route.bucket : null;
    },
    defaultRoute: first ? first.path.replace(/\{[A-Za-z]+(:str)?\}/g, (_m, str?: string) => (str ? 'a' : '1')) : null,
  };
}

/**
 * The rest profile of `file` (ROUTES_FILE and PLANS_FILE as the programs read them, for a workspace
 * profile's sake), or null for a workspace profile: the load test then knows the workspace API itself.
 */
export function readProfileTarget(
  file: string,
  env: Record<string, string | undefined> = process.env,
): ProfileTarget | null {
  const profile = loadProfile({
    PROFILE_FILE: file,
    ROUTES_FILE: env.ROUTES_FILE || 'config/routes.json',
    PLANS_FILE: env.PLANS_FILE || 'config/plans.json',
  });
  if (profile.kind === 'workspace') return null;
  const iface = profile.interfaces[0];
  return profileTarget(iface, profile.routes.tables[iface.id], profile.name);
}
