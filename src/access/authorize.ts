// Steps 5 to 10 of CONTRACT section 3 as one pure function of a resolved principal and a route.
import type { RouteDef } from '../config/routes.js';
import type { Identity } from '../http/identity.js';
import { roleRank, type Principal } from './principal.js';

export type Denial = '150007' | '040006' | '150004' | '150003';

export interface Granted {
  /** The role the key acts at in the path workspace (null on routes without one, for personal keys). */
  role: string | null;
  workspaceId: number | null;
}

/** Steps 5 and 6: the organization may use the API at all. */
export function organizationDenial(p: Principal): '150007' | '040006' | null {
  if (!p.apiAccess) return '150007';
  if (p.paused) return '040006';
  return null;
}

/** Steps 8 to 10 for a matched /v2 route. */
export function authorizeRoute(p: Principal, route: RouteDef, params: Record<string, string>): Denial | Granted {
  const wid = params.workspaceId !== undefined ? Number(params.workspaceId) : null;
  // Step 8: the path workspace.
  let role: string | null = p.keyType === 'workspace' ? p.role : null;
  if (wid !== null) {
    if (p.keyType === 'workspace') {
      if (p.workspaceId !== wid || p.workspaceDeleted) return '150004';
    } else {
      const m = p.memberships.get(wid);
      if (!m) return '150004';
      role = m;
    }
  }
  // A workspace key whose workspace is gone is refused everywhere, also on routes without a workspace.
  if (p.keyType === 'workspace' && p.workspaceDeleted) return '150004';
  if (route.scope === null) return { role, workspaceId: wid }; // answered by the gateway, no scope
  // `GET /v2/workspaces` also accepts a workspace key holding workspace:read (CONTRACT section 6).
  if (route.method === 'GET' && route.path === '/v2/workspaces' && p.keyType === 'workspace') {
    if (!p.scopes.has('workspace:read')) return '150003';
    return roleRank(role) >= roleRank('VIEWER') ? { role, workspaceId: p.workspaceId } : '150003';
  }
  // Step 9: the scope.
  if (!p.scopes.has(route.scope)) return '150003';
  // Step 10: the role caps the scope; provisioning scopes need a personal key of an organization owner.
  if (route.minRole === 'ORG_OWNER') {
    return p.keyType === 'personal' && p.orgRole === 'OWNER' ? { role, workspaceId: wid } : '150003';
  }
  if (wid === null) return '150003'; // a workspace scope on a route without a workspace: no role to act at
  return roleRank(role) >= roleRank(route.minRole) ? { role, workspaceId: wid } : '150003';
}

export function identityOf(p: Principal, g: Granted | null): Identity {
  const id: Identity = {
    keyId: p.keyId,
    keyType: p.keyType,
    organizationId: p.organizationId,
    userId: p.userId,
    workspaceId: g?.workspaceId ?? p.workspaceId,
    role: g?.role ?? p.role,
    scopes: [...p.scopes],
    plan: p.plan,
  };
  // Only keys that carry metadata add the field: every other identity stays byte for byte as before.
  if (p.metadata !== null) id.metadata = p.metadata;
  return id;
}
