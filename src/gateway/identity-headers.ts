// The identity the upstream is told of a request's key (docs/decisions.md section 5): the principal at the
// role and workspace its grant gives, and the identity header encoded from it, kept per principal.
import type { Principal } from '../access/principal.js';
import type { Granted } from './guards/permission.js';
import { encodeIdentity, type Identity } from '../http/identity.js';

/** What the upstream is told of the request's key: the principal, at the role and workspace granted. */
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

// The identity header does not change per request for one principal and grant: encoded once. Nearly
// every principal is forwarded under one grant only (a workspace key acts in its workspace at its role),
// so that one is kept in a small record; a Map is made for a principal seen under a second grant (a
// personal key in several workspaces). A Map per principal cost about 350 bytes per cached key in V8's
// heap (its table and itself), the record about 40 (bench/RESULTS.md, issue 25).
interface Encoded {
  granted: boolean;
  workspaceId: number | null;
  role: string | null;
  identity: string;
}
const identities = new WeakMap<Principal, Encoded | Map<string, string>>();
const grantKey = (g: Granted | null) => (g ? `${g.workspaceId}|${g.role}` : '');
export function identityHeader(principal: Principal, grant: Granted | null): string {
  const held = identities.get(principal);
  if (held === undefined) {
    const identity = encodeIdentity(identityOf(principal, grant));
    identities.set(principal, {
      granted: grant !== null,
      workspaceId: grant?.workspaceId ?? null,
      role: grant?.role ?? null,
      identity,
    });
    return identity;
  }
  let byGrant: Map<string, string>;
  if (held instanceof Map) byGrant = held;
  else if (
    grant === null ? !held.granted : held.granted && held.workspaceId === grant.workspaceId && held.role === grant.role
  )
    return held.identity;
  else {
    byGrant = new Map([[grantKey(held.granted ? held : null), held.identity]]);
    identities.set(principal, byGrant);
  }
  const k = grantKey(grant);
  let v = byGrant.get(k);
  if (v === undefined) byGrant.set(k, (v = encodeIdentity(identityOf(principal, grant))));
  return v;
}
