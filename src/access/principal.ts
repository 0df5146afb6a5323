// Resolving an API key's secret hash to the principal the gateway authorizes: the key, its
// organization, and the workspaces and roles it may act in. Read from PostgreSQL; cached by the
// gateway only while the organization's access version is unchanged (see access/cache.ts).
import type { Queryable } from '../db/types.js';
import { ROLES, type Role } from '../config/routes.js';
import { limitOverridesOf, type LimitOverrides } from '../config/budgets.js';

export interface Principal {
  keyId: number;
  /** The key's type: a name of its profile's key types (`workspace`, `personal`, `partner`, `consumer`). */
  keyType: string;
  organizationId: number;
  plan: string | null;
  apiAccess: boolean;
  paused: boolean;
  scopes: ReadonlySet<string>;
  /** Workspace key: its workspace and stamped role (deleted workspaces are refused at step 8). */
  workspaceId: number | null;
  workspaceDeleted: boolean;
  role: Role | null;
  /** Personal key: the user, their organization role and live membership roles (live workspaces only). */
  userId: number | null;
  orgRole: 'OWNER' | 'MEMBER' | null;
  memberships: ReadonlyMap<number, Role>;
  /**
   * The instant (ms) from which this secret is refused: the key's expiry, or the end of the grace period
   * when the secret is one a rotation replaced; Infinity for never. Compared with the clock on every
   * request, so a principal cached before the instant never serves after it.
   */
  expiresAt: number;
  /** The key's metadata, sent upstream in the signed identity; null when none. */
  metadata: Record<string, unknown> | null;
  /** The keyed hash of the secret this principal was resolved from (where its last use is recorded). */
  secretHash: string;
  /** The key's and its organization's overrides of the plan's limits (src/config/budgets.ts). */
  limits: LimitOverrides;
}

/** Whether a principal's secret is expired at `now` (ms): the first instant at or after expiresAt. */
export function isExpired(p: Principal, now: number): boolean {
  return now >= p.expiresAt;
}

export function roleRank(r: string | null | undefined): number {
  return r ? ROLES.indexOf(r as Role) : -1;
}

// Many keys share the same scope list: one frozen Set per distinct list keeps 10,000 cached principals
// small (the issue-6 RSS budget), instead of a Set of fresh strings per key.
const scopeSets = new Map<string, ReadonlySet<string>>();
function internScopes(scopes: string[] | null): ReadonlySet<string> {
  const list = [...new Set(scopes ?? [])].sort();
  const k = list.join(' ');
  let set = scopeSets.get(k);
  if (!set) {
    if (scopeSets.size >= 10_000) scopeSets.clear();
    scopeSets.set(k, (set = new Set(list)));
  }
  return set;
}
const NO_MEMBERSHIPS: ReadonlyMap<number, Role> = new Map();

// The driver reads every text column as a fresh string per row: the few values of a key's type, role and
// plan are kept once each, not once per cached principal (issue 25).
const plans = new Map<string, string>();
function internPlan(plan: string | null): string | null {
  if (plan === null) return null;
  let v = plans.get(plan);
  if (v === undefined) {
    if (plans.size >= 1_000) plans.clear();
    plans.set(plan, (v = plan));
  }
  return v;
}
const internRole = (role: string | null): Role | null => ROLES.find((r) => r === role) ?? (role as Role | null);

/**
 * One query per key, plus one for a personal key's memberships. Revoked keys resolve to null; expired
 * ones resolve with an expiresAt in the past (the caller refuses them by time, as it does cached ones).
 */
export async function resolvePrincipal(q: Queryable, keyHash: string, keyType: string): Promise<Principal | null> {
  const rows = await q.query(
    `SELECT k.id, k.type, k.organization_id, k.workspace_id, k.user_id, k.role, k.scopes,
            k.expires_at, k.metadata, k.key_hash = $1 AS current_secret, k.previous_expires_at,
            o.plan, o.api_access, o.paused,
            k.limit_read AS k_read, k.limit_write AS k_write, k.limit_bulk AS k_bulk,
            o.limit_read AS o_read, o.limit_write AS o_write, o.limit_bulk AS o_bulk, o.monthly_quota, o.monthly_quota_off,
            w.deleted_at IS NOT NULL AS ws_deleted, w.organization_id AS ws_org,
            u.org_role, u.organization_id AS user_org
       FROM api_keys k
       JOIN organizations o ON o.id = k.organization_id
       LEFT JOIN workspaces w ON w.id = k.workspace_id
       LEFT JOIN users u ON u.id = k.user_id
      WHERE (k.key_hash = $1 OR k.previous_key_hash = $1) AND k.revoked_at IS NULL`,
    [keyHash],
  );
  const k = rows[0];
  // The prefix must fit the stored type (docs/decisions.md section 3, step 4).
  if (!k || k.type !== keyType) return null;
  let memberships: ReadonlyMap<number, Role> = NO_MEMBERSHIPS;
  if (k.type === 'personal') {
    if (k.user_org !== k.organization_id) return null;
    const ms = await q.query(
      `SELECT m.workspace_id, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
        WHERE m.user_id = $1 AND w.deleted_at IS NULL AND w.organization_id = $2`,
      [k.user_id, k.organization_id],
    );
    memberships = new Map(ms.map((m) => [m.workspace_id as number, m.role as Role]));
  }
  return {
    keyId: k.id,
    keyType, // equal to k.type, checked above
    organizationId: k.organization_id,
    plan: internPlan(k.plan),
    apiAccess: k.api_access,
    paused: k.paused,
    scopes: internScopes(k.scopes),
    workspaceId: k.workspace_id,
    workspaceDeleted: k.type === 'workspace' ? Boolean(k.ws_deleted) || k.ws_org !== k.organization_id : false,
    role: internRole(k.role),
    userId: k.user_id,
    orgRole: k.org_role ?? null,
    memberships,
    expiresAt: Math.min(
      k.expires_at ? new Date(k.expires_at).getTime() : Infinity,
      // A replaced secret lives until its grace period ends.
      !k.current_secret && k.previous_expires_at ? new Date(k.previous_expires_at).getTime() : Infinity,
    ),
    metadata: k.metadata ?? null,
    secretHash: keyHash,
    limits: limitOverridesOf(k),
  };
}

/** The organization a key belongs to; it never changes, so the gateway may remember it unchecked. */
export async function organizationOfKey(q: Queryable, keyHash: string): Promise<number | null> {
  const rows = await q.query(`SELECT organization_id FROM api_keys WHERE key_hash = $1 OR previous_key_hash = $1`, [
    keyHash,
  ]);
  return rows[0]?.organization_id ?? null;
}
