// What each scope grants and the least role it needs (spec, Authentication: the scope table;
// docs/decisions.md section 6: minimum roles). A test keeps the minimum roles equal to config/routes.json.
import { roleRank } from '../../access/principal.js';
import type { MinRole } from '../../config/routes.js';

export const SCOPE_GRANTS: Record<string, { minimumRole: MinRole; grants: string }> = {
  'accounts:read': {
    minimumRole: 'VIEWER',
    grants:
      'read accounts, DNS, setup scores and bulk status; list provider workspaces, preview mailboxes, read sync status',
  },
  'accounts:write': {
    minimumRole: 'EDITOR',
    grants:
      'connect (SMTP/IMAP, partner OAuth, consent links), disconnect and delete accounts; register a tenant and start a sync; bulk-tag accounts',
  },
  'warmup:read': { minimumRole: 'VIEWER', grants: 'read warmup settings and activity' },
  'warmup:manage': { minimumRole: 'EDITOR', grants: 'enable, pause, resume warmup; update warmup settings' },
  'tags:read': { minimumRole: 'VIEWER', grants: 'list tags' },
  'tags:write': { minimumRole: 'EDITOR', grants: "create tags; set an account's tags" },
  'analytics:read': {
    minimumRole: 'VIEWER',
    grants: 'overview, trends, leaderboard, deliverability, per-account stats',
  },
  'notifications:read': { minimumRole: 'VIEWER', grants: 'list notifications' },
  'notifications:manage': { minimumRole: 'EDITOR', grants: 'mark one or all notifications read' },
  'billing:read': { minimumRole: 'ADMIN', grants: 'organization plan, usage against limits, resolved capabilities' },
  'workspace:read': { minimumRole: 'VIEWER', grants: 'read the workspace and its member roster' },
  'workspace:manage': { minimumRole: 'ADMIN', grants: 'rename the workspace; invite, re-role and remove members' },
  'workspace:provision': {
    minimumRole: 'ORG_OWNER',
    grants: 'list and create workspaces (personal key of an organization owner)',
  },
  'workspace:quota': {
    minimumRole: 'ORG_OWNER',
    grants: 'read and change per-workspace daily warmup budgets (personal key of an organization owner)',
  },
};

export interface Caller {
  keyType: string;
  role: string | null;
  orgRole: 'OWNER' | 'MEMBER' | null;
  scopes: readonly string[];
}

/** Whether a held scope is usable by this caller in the path workspace (the gateway's steps 9 and 10). */
export function resolveCapabilities(caller: Caller) {
  const held = new Set(caller.scopes);
  return Object.entries(SCOPE_GRANTS).map(([scope, grants]) => {
    const roleOk =
      grants.minimumRole === 'ORG_OWNER'
        ? caller.keyType === 'personal' && caller.orgRole === 'OWNER'
        : roleRank(caller.role) >= roleRank(grants.minimumRole);
    let reason: string | null = null;
    if (!held.has(scope)) reason = 'scope not held by the key';
    else if (!roleOk)
      reason =
        grants.minimumRole === 'ORG_OWNER'
          ? 'needs a personal key of an organization owner'
          : `needs role ${grants.minimumRole} or above`;
    return {
      scope,
      held: held.has(scope),
      minimumRole: grants.minimumRole,
      allowed: reason === null,
      reason,
      grants: grants.grants,
    };
  });
}
