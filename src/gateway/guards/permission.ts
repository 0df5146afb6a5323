// Steps 8 to 10: the path workspace is the key's (or one its user belongs to) and not deleted; the
// key holds the route's scope; the role the key acts at reaches the scope's minimum role.
import { roleRank, type Principal } from '../../access/principal.js';
import type { Refusal } from '../refusal.js';
import type { RouteMatch } from './route.js';

/** What the key may act as on the route: the identity the upstream is told (../identity-headers.ts). */
export interface Granted {
  /** The role the key acts at in the path workspace (null on routes without one, for personal keys). */
  role: string | null;
  workspaceId: number | null;
}

export function permissionGuard(p: Principal, { route, params }: RouteMatch): Refusal | Granted {
  const wid = params.workspaceId !== undefined ? Number(params.workspaceId) : null;
  // Step 8: the path workspace.
  let role: string | null = p.keyType === 'workspace' ? p.role : null;
  if (wid !== null) {
    if (p.keyType === 'workspace') {
      if (p.workspaceId !== wid || p.workspaceDeleted) return { code: '150004' };
    } else {
      const m = p.memberships.get(wid);
      if (!m) return { code: '150004' };
      role = m;
    }
  }
  // A workspace key whose workspace is gone is refused everywhere, also on routes without a workspace.
  if (p.keyType === 'workspace' && p.workspaceDeleted) return { code: '150004' };
  if (route.scope === null) return { role, workspaceId: wid }; // answered by the gateway, no scope
  // `GET /v2/workspaces` also accepts a workspace key holding workspace:read (docs/decisions.md section 6).
  if (route.method === 'GET' && route.path === '/v2/workspaces' && p.keyType === 'workspace') {
    if (!p.scopes.has('workspace:read')) return { code: '150003' };
    return roleRank(role) >= roleRank('VIEWER') ? { role, workspaceId: p.workspaceId } : { code: '150003' };
  }
  // Step 9: the scope.
  if (!p.scopes.has(route.scope)) return { code: '150003' };
  // Step 10: the role caps the scope; provisioning scopes need a personal key of an organization owner.
  if (route.minRole === 'ORG_OWNER') {
    return p.keyType === 'personal' && p.orgRole === 'OWNER' ? { role, workspaceId: wid } : { code: '150003' };
  }
  if (wid === null) return { code: '150003' }; // a workspace scope on a route without a workspace: no role to act at
  return roleRank(role) >= roleRank(route.minRole) ? { role, workspaceId: wid } : { code: '150003' };
}

/**
 * A consumer's key (docs/profiles.md, kind `rest`): it holds the route's scope, or the route has none.
 * Nothing is granted beyond the key itself: no workspace, no role.
 */
export function scopeGuard(p: Principal, { route }: RouteMatch): Refusal | Granted {
  if (route.scope !== null && !p.scopes.has(route.scope)) return { code: '150003' };
  return NO_GRANT;
}
const NO_GRANT: Granted = Object.freeze({ role: null, workspaceId: null });
