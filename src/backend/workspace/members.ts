// Members of a workspace: the roster, invitations, re-roles and removals. Each write runs in one
// transaction that locks the workspace row, so the last-owner rule holds under concurrent requests, and
// writes its audit row in that transaction (a membership is access data: docs/service-layer.md, The
// audit trail).
import { ApiError } from '../../http/errors.js';
import { roleRank } from '../../access/principal.js';
import type { Queryable } from '../../db/types.js';
import type { Db } from '../../db/index.js';
import type { Role } from '../../config/routes.js';
import { recordAudit } from '../../access/service/audit.js';
import type { ServiceContext } from '../../access/service/context.js';
import {
  countOtherOwners,
  deleteMembership,
  findMember,
  findUserByEmail,
  insertMembership,
  insertUserIfNew,
  listMemberRows,
  lockLiveWorkspace,
  updateMemberRole,
  type MemberRow,
} from './queries.js';

export interface MemberScope {
  organizationId: number;
  workspaceId: number;
  /** The role the calling key acts at in the workspace (ctx.identity.role). */
  callerRole: string | null;
  /** Who the audit trail names for a change (the calling key) and the request's id. */
  audit: Pick<ServiceContext, 'actor' | 'requestId'>;
}

/** The audit row of one membership change, in the change's transaction. */
async function auditMember(
  q: Queryable,
  scope: MemberScope,
  action: string,
  before: Member | null,
  after: Member | null,
) {
  const userId = (after ?? before)!.userId;
  const row = (m: Member | null) => (m ? { workspaceId: scope.workspaceId, ...m } : null);
  await recordAudit(q, scope.audit, {
    action,
    targetType: 'member',
    targetIds: [scope.workspaceId, userId],
    organizationId: scope.organizationId,
    before: row(before),
    after: row(after),
  });
}

export interface Member {
  userId: number;
  email: string;
  role: Role;
  orgRole: 'OWNER' | 'MEMBER';
  joinedAt: string;
}

function view(row: MemberRow): Member {
  return {
    userId: row.user_id,
    email: row.email,
    role: row.role,
    orgRole: row.org_role,
    joinedAt: new Date(row.created_at).toISOString(),
  };
}

export async function listMembers(db: Queryable, workspaceId: number): Promise<Member[]> {
  return (await listMemberRows(db, workspaceId)).map(view);
}

async function lockWorkspace(db: Queryable, scope: MemberScope): Promise<void> {
  if (!(await lockLiveWorkspace(db, scope.workspaceId, scope.organizationId)))
    throw new ApiError('not_found', `No workspace ${scope.workspaceId}.`);
}

/** A caller can never grant a role above the one it acts at (like key creation, spec 150102). */
function assertGrantable(scope: MemberScope, role: Role): void {
  if (roleRank(role) > roleRank(scope.callerRole)) {
    throw new ApiError(
      'forbidden',
      `Cannot grant role ${role}: it is above the caller's role ${scope.callerRole ?? 'none'}.`,
      {
        field: 'role',
        callerRole: scope.callerRole,
      },
    );
  }
}

async function lockMember(db: Queryable, scope: MemberScope, userId: number): Promise<MemberRow> {
  const memberRow = await findMember(db, scope.workspaceId, userId, true);
  if (!memberRow) throw new ApiError('not_found', `User ${userId} is not a member of workspace ${scope.workspaceId}.`);
  // A member above the caller's own role is out of the caller's reach (an ADMIN cannot demote an OWNER).
  if (roleRank(memberRow.role) > roleRank(scope.callerRole)) {
    throw new ApiError(
      'forbidden',
      `Cannot change member ${userId}: their role ${memberRow.role} is above the caller's role ${scope.callerRole ?? 'none'}.`,
      {
        userId,
        callerRole: scope.callerRole,
      },
    );
  }
  return memberRow;
}

/** Refuse a change that would leave the workspace without an OWNER. */
async function assertOwnerRemains(db: Queryable, scope: MemberScope, userId: number): Promise<void> {
  if ((await countOtherOwners(db, scope.workspaceId, userId)) === 0)
    throw new ApiError('conflict', 'The workspace must keep at least one OWNER.', { userId });
}

/**
 * Invite by address. A user of the organization becomes a member. An address no user has yet becomes a
 * new user of the organization (org role MEMBER) and a member: the web app's invitation flow lets them
 * sign in later. An address that belongs to another organization's user is 409 conflict (a user
 * belongs to exactly one organization). Already a member: 409 conflict.
 */
export async function inviteMember(
  db: Db,
  scope: MemberScope,
  invite: { email: string; role: Role },
): Promise<{ member: Member; userCreated: boolean }> {
  assertGrantable(scope, invite.role);
  return db.tx(async (tx) => {
    await lockWorkspace(tx, scope);
    const userCreated = await insertUserIfNew(tx, scope.organizationId, invite.email);
    // Created now, or the user that already had the address.
    const user = (await findUserByEmail(tx, invite.email))!;
    if (user.organization_id !== scope.organizationId) {
      throw new ApiError('conflict', 'That address belongs to a user of another organization.', { field: 'email' });
    }
    if (!(await insertMembership(tx, scope.workspaceId, user.id, invite.role)))
      throw new ApiError('conflict', `User ${user.id} is already a member of workspace ${scope.workspaceId}.`, {
        userId: user.id,
      });
    const member = view((await findMember(tx, scope.workspaceId, user.id))!);
    await auditMember(tx, scope, 'member.invite', null, member);
    return { member, userCreated };
  });
}

export async function reroleMember(db: Db, scope: MemberScope, userId: number, role: Role): Promise<Member> {
  assertGrantable(scope, role);
  return db.tx(async (tx) => {
    await lockWorkspace(tx, scope);
    const member = await lockMember(tx, scope, userId);
    if (member.role === 'OWNER' && role !== 'OWNER') await assertOwnerRemains(tx, scope, userId);
    await updateMemberRole(tx, scope.workspaceId, userId, role);
    const after = view({ ...member, role });
    await auditMember(tx, scope, 'member.update', view(member), after);
    return after;
  });
}

export async function removeMember(db: Db, scope: MemberScope, userId: number): Promise<Member> {
  return db.tx(async (tx) => {
    await lockWorkspace(tx, scope);
    const member = await lockMember(tx, scope, userId);
    if (member.role === 'OWNER') await assertOwnerRemains(tx, scope, userId);
    await deleteMembership(tx, scope.workspaceId, userId);
    await auditMember(tx, scope, 'member.remove', view(member), null);
    return view(member);
  });
}
