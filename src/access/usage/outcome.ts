// What an answered request counts as in the usage history (docs/usage.md, Storage): forwarded by the
// status class the client got, answered by the gateway itself, refused by a limit layer, or refused by
// its code. Read from the gateway's trace of the request; the shapes are declared here by the members
// read, since access/ sits below the gateway (CONTRIBUTING, Layers).
import type { Routes } from '../../config/routes.js';

/** The interface's id: `v2`, `v1`, or a profile's name. */
export type UsageApi = string;

/** What the gateway's Trace (src/gateway/context.ts) says of a request, as far as the history reads it. */
export interface UsageTrace {
  route: string;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
  limit?: 'key' | 'address' | 'month';
}

export const FORWARDED = ['forwarded_2xx', 'forwarded_3xx', 'forwarded_4xx', 'forwarded_5xx'] as const;
export const ANSWERED = 'answered';
export const LIMITED = { key: 'limited_key', address: 'limited_address', month: 'limited_month' } as const;

/**
 * The gateway's own failures of an admitted request's forwarding (the upstream unreachable, too slow,
 * or cut off by the drain): the client got a 5xx for a request that was admitted, as from the upstream.
 * Known by status, since a profile names its refusals in its own words (docs/profiles.md): after a key
 * is resolved, the gateway answers 502 and 504 for nothing else.
 */
const FORWARDING_STATUSES = new Set([502, 504]);

/** refused_<code>, one string per code, so counting a refusal builds no string. */
const refusedNames = new Map<string, string>();

function refused(code: string): string {
  let name = refusedNames.get(code);
  if (name === undefined) refusedNames.set(code, (name = `refused_${code}`));
  return name;
}

/** The paths of the routes the gateway answers itself (config/routes.json `gateway: true`); a path names its interface. */
export type GatewayRoutes = ReadonlySet<string>;

const NONE: GatewayRoutes = new Set();

export function gatewayRoutesOf(routes: Routes): GatewayRoutes {
  const out = new Set<string>();
  for (const table of Object.values(routes.tables)) for (const r of table.all) if (r.gateway) out.add(r.path);
  return out;
}

/**
 * The outcome of one answered request. `answeredRoutes` names the routes the gateway answers itself
 * (the rate-limit status routes); an answer with neither a key nor a refusal (a CORS preflight, the API
 * description) is the gateway's own too.
 */
export function outcomeOf(
  _api: UsageApi,
  trace: UsageTrace,
  status: number,
  answeredRoutes: GatewayRoutes = NONE,
): string {
  const { code } = trace;
  if (code !== null) {
    if (trace.limit !== undefined) return LIMITED[trace.limit];
    if (trace.keyId !== null && FORWARDING_STATUSES.has(status)) return FORWARDED[3];
    return refused(code);
  }
  if (trace.keyId === null || answeredRoutes.has(trace.route)) return ANSWERED;
  // A 101 is a WebSocket tunnel the service accepted (counted once, as it opened): a success.
  if (status === 101) return FORWARDED[0];
  const cls = Math.floor(status / 100);
  // Any other 1xx cannot end an exchange; anything outside 2xx..5xx is the upstream's odd status,
  // counted with 5xx.
  return cls >= 2 && cls <= 5 ? FORWARDED[cls - 2] : FORWARDED[3];
}
