// Members of a workspace: the roster, invitations, re-roles and removals. Each write runs in one
// transaction that locks the workspace row, so the last-owner rule holds under concurrent requests.
import { ApiError } from '../../http/errors.js';
import { roleRank } from '../../access/principal.js';
import type { Queryable, Row } from '../../db/types.js';
import type { Db } from '../../db/index.js';
import type { Role } from '../../config/routes.js';

export interface MemberScope {
  organizationId: number;
  workspaceId: number;
  /** The role the calling key acts at in the workspace (ctx.identity.role). */
  callerRole: string | null;
}

export interface Member {
  userId: number;
  email: string;
  role: Role;
  orgRole: 'OWNER' | 'MEMBER';
  joinedAt: string;
}

function view(r: Row): Member {
  return { userId: r.user_id, email: r.email, role: r.role, orgRole: r.org_role, joinedAt: new Date(r.created_at).toISOString() };
}

const MEMBER_SQL = `SELECT m.user_id, u.email, m.role, u.org_role, m.created_at
  FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1`;

export async function listMembers(db: Queryable, workspaceId: number): Promise<Member[]> {
  const rows = await db.query(`${MEMBER_SQL} ORDER BY m.user_id`, [workspaceId]);
  return rows.map(view);
}

async function lockWorkspace(q: Queryable, s: MemberScope): Promise<void> {
  const rows = await q.query(
    `SELECT id FROM workspaces WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL FOR UPDATE`,
    [s.workspaceId, s.organizationId],
  );
  if (!rows.length) throw new ApiError('not_found', `No workspace ${s.workspaceId}.`);
}

/** A caller can never grant a role above the one it acts at (like key creation, spec 150102). */
function assertGrantable(s: MemberScope, role: Role): void {
  if (roleRank(role) > roleRank(s.callerRole)) {
    throw new ApiError('forbidden', `Cannot grant role ${role}: it is above the caller's role ${s.callerRole ?? 'none'}.`, {
      field: 'role',
      callerRole: s.callerRole,
    });
  }
}

async function lockMember(q: Queryable, s: MemberScope, userId: number): Promise<Row> {
  const rows = await q.query(`${MEMBER_SQL} AND m.user_id = $2 FOR UPDATE OF m`, [s.workspaceId, userId]);
  if (!rows.length) throw new ApiError('not_found', `User ${userId} is not a member of workspace ${s.workspaceId}.`);
  const m = rows[0];
  // A member above the caller's own role is out of the caller's reach (an ADMIN cannot demote an OWNER).
  if (roleRank(m.role) > roleRank(s.callerRole)) {
    throw new ApiError('forbidden', `Cannot change member ${userId}: their role ${m.role} is above the caller's role ${s.callerRole ?? 'none'}.`, {
      userId,
      callerRole: s.callerRole,
    });
  }
  return m;
}

/** Refuse a change that would leave the workspace without an OWNER. */
async function assertOwnerRemains(q: Queryable, s: MemberScope, userId: number): Promise<void> {
  const [r] = await q.query(
    `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = $1 AND role = 'OWNER' AND user_id <> $2`,
    [s.workspaceId, userId],
  );
  if (r.n === 0) throw new ApiError('conflict', 'The workspace must keep at least one OWNER.', { userId });
}

/**
 * Invite by address. A user of the organization becomes a member. An address no user has yet becomes a
 * new user of the organization (org role MEMBER) and a member: the web app's invitation flow lets them
 * sign in later. An address that belongs to another organization's user is 409 conflict (a user
 * belongs to exactly one organization). Already a member: 409 conflict.
 */
export async function inviteMember(db: Db, s: MemberScope, b: { email: string; role: Role }): Promise<{ member: Member; userCreated: boolean }> {
  assertGrantable(s, b.role);
  return db.tx(async (q) => {
    await lockWorkspace(q, s);
    const inserted = await q.query(
      `INSERT INTO users (organization_id, email, org_role) VALUES ($1, $2, 'MEMBER')
       ON CONFLICT (lower(email)) DO NOTHING RETURNING id`,
      [s.organizationId, b.email],
    );
    const [user] = await q.query(`SELECT id, organization_id FROM users WHERE lower(email) = lower($1)`, [b.email]);
    if (user.organization_id !== s.organizationId) {
      throw new ApiError('conflict', 'That address belongs to a user of another organization.', { field: 'email' });
    }
    const added = await q.query(
      `INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, user_id) DO NOTHING RETURNING user_id`,
      [s.workspaceId, user.id, b.role],
    );
    if (!added.length) throw new ApiError('conflict', `User ${user.id} is already a member of workspace ${s.workspaceId}.`, { userId: user.id });
    const [row] = await q.query(`${MEMBER_SQL} AND m.user_id = $2`, [s.workspaceId, user.id]);
    return { member: view(row), userCreated: inserted.length > 0 };
  });
}

export async function reroleMember(db: Db, s: MemberScope, userId: number, role: Role): Promise<Member> {
  assertGrantable(s, role);
  return db.tx(async (q) => {
    await lockWorkspace(q, s);
    const m = await lockMember(q, s, userId);
    if (m.role === 'OWNER' && role !== 'OWNER') await assertOwnerRemains(q, s, userId);
    await q.query(`UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2`, [s.workspaceId, userId, role]);
    return view({ ...m, role });
  });
}

export async function removeMember(db: Db, s: MemberScope, userId: number): Promise<Member> {
  return db.tx(async (q) => {
    await lockWorkspace(q, s);
    const m = await lockMember(q, s, userId);
    if (m.role === 'OWNER') await assertOwnerRemains(q, s, userId);
    await q.query(`DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [s.workspaceId, userId]);
    return view(m);
  });
}
