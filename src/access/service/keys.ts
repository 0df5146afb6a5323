// Key operations: create, list, get, update (name, expiry, metadata), rotate, revoke. Each validates,
// writes in one transaction with its audit row, and bumps the organization's access version after the
// commit, so every gateway applies the change to the very next request. A new secret is returned
// once and stored only as its keyed hash.
import type { Queryable, Row } from '../../db/types.js';
import { ROLES, type Role } from '../../config/routes.js';
import { generateSecret, hashSecret, hintOf, keyTypeIn } from '../secrets.js';
import {
  bindingOf as bindingKind,
  holdsScopes,
  keyTypeRule,
  keyTypesOf,
  WORKSPACE_KEY_PROFILE,
  type KeyProfile,
  type KeyTypeRule,
} from '../key-types.js';
import { SCOPE_NAME } from '../../config/profile/schema.js';
import { roleRank } from '../principal.js';
import { recordAudit } from './audit.js';
import { nowOf, ServiceError, type ServiceContext } from './context.js';
import { isoOrNull } from '../../db/time.js';
import { keyChanged, keyCreated } from '../events/service-events.js';
import {
  insertKey,
  keyRow,
  keyRows,
  membershipRole,
  organizationExists,
  organizationOfLiveWorkspace,
  organizationOfUser,
  revokeKeyRow,
  rotateKeyRow,
  updateKeyRow,
  userRow,
  type KeyFilter,
  type KeyStatus,
} from './queries.js';

export type { KeyFilter, KeyStatus };

export const KEY_NAME_MAX = 100;
export const MAX_SCOPES = 32;
export const METADATA_MAX_BYTES = 1024;
/** A rotation's default grace period: the old secret keeps working this long (issue 22 item 2). */
export const DEFAULT_GRACE_MS = 24 * 3_600_000;
export const MAX_GRACE_MS = 30 * 86_400_000;

export type KeyMetadata = Record<string, unknown>;

/** A key as every interface shows it: never its secret, never a hash. */
export interface KeyView {
  id: number;
  organizationId: number;
  name: string;
  /** One of the profile's key types (`workspace`, `personal`, `partner` of the workspace API; `consumer`, ...). */
  type: string;
  hint: string;
  workspaceId: number | null;
  userId: number | null;
  role: Role | null;
  scopes: string[];
  createdBy: number | null;
  createdAt: string;
  revokedAt: string | null;
  expiresAt: string | null;
  status: KeyStatus;
  metadata: KeyMetadata | null;
  /** The last use of any of its secrets, to the minute (batched by the gateways). */
  lastUsedAt: string | null;
  rotatedAt: string | null;
  /** The secret a rotation replaced, while its grace period runs. */
  previousSecret: { hint: string; expiresAt: string; lastUsedAt: string | null } | null;
}

export function keyView(k: Row, now: Date): KeyView {
  const expired = k.expires_at != null && new Date(k.expires_at).getTime() <= now.getTime();
  const graceLive = k.previous_key_hash != null && new Date(k.previous_expires_at).getTime() > now.getTime();
  return {
    id: k.id,
    organizationId: k.organization_id,
    name: k.name,
    type: k.type,
    hint: k.hint,
    workspaceId: k.workspace_id,
    userId: k.user_id,
    role: k.role,
    scopes: k.scopes,
    createdBy: k.created_by,
    createdAt: isoOrNull(k.created_at)!,
    revokedAt: isoOrNull(k.revoked_at),
    expiresAt: isoOrNull(k.expires_at),
    status: k.revoked_at ? 'revoked' : expired ? 'expired' : 'active',
    metadata: k.metadata ?? null,
    lastUsedAt: isoOrNull(k.last_used_at),
    rotatedAt: isoOrNull(k.rotated_at),
    previousSecret: graceLive
      ? {
          hint: k.previous_hint,
          expiresAt: isoOrNull(k.previous_expires_at)!,
          lastUsedAt: isoOrNull(k.previous_last_used_at),
        }
      : null,
  };
}

// ---------------------------------------------------------------------------------------------
// Validation shared by every interface

/** A name: 1 to 100 characters once trimmed. */
export function checkName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > KEY_NAME_MAX)
    throw new ServiceError('invalid', `name must be 1 to ${KEY_NAME_MAX} characters`, 'name', 'name');
  return name;
}

/**
 * Metadata: a JSON object of at most 1 KiB as compact JSON, or null (none). It travels in the signed
 * identity to the upstream, so its size is bounded here once rather than at every request.
 */
export function checkMetadata(raw: unknown): KeyMetadata | null {
  if (raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new ServiceError('invalid', 'metadata must be a JSON object or null', 'metadata', 'metadata');
  let text: string;
  try {
    text = JSON.stringify(raw);
  } catch {
    throw new ServiceError('invalid', 'metadata must be plain JSON', 'metadata', 'metadata');
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > METADATA_MAX_BYTES)
    throw new ServiceError(
      'invalid',
      `metadata is ${bytes} bytes as JSON; at most ${METADATA_MAX_BYTES}`,
      'metadata',
      'metadata',
    );
  return JSON.parse(text) as KeyMetadata;
}

/** An expiry instant: a valid date, or null (never). It may lie in the past: the key is then expired at once. */
export function checkExpiresAt(raw: Date | null): Date | null {
  if (raw === null) return null;
  if (!(raw instanceof Date) || Number.isNaN(raw.getTime()))
    throw new ServiceError('invalid', 'expiresAt must be a date and time', 'expiresAt', 'expiresAt');
  return raw;
}

/** The profile a context makes keys under: its own, or the workspace API's. */
export function profileOf(ctx: Pick<ServiceContext, 'profile'>): KeyProfile {
  return ctx.profile?.() ?? WORKSPACE_KEY_PROFILE;
}

/** A key type of the context's profile, or the refusal naming the profile's types. */
export function checkKeyType(ctx: Pick<ServiceContext, 'profile'>, type: string): KeyTypeRule {
  const profile = profileOf(ctx);
  const rule = keyTypeRule(profile, type);
  if (rule) return rule;
  const names = keyTypesOf(profile).map((t) => t.name);
  throw new ServiceError(
    'invalid',
    `type: no key type ${JSON.stringify(type)} in profile ${profile.name}; its key types are ${names.join(', ')}`,
    'type',
    'type',
  );
}

function checkScopes(ctx: ServiceContext, scopes: string[]): string[] {
  const bad = scopes.find((s) => !SCOPE_NAME.test(s));
  if (bad !== undefined)
    throw new ServiceError(
      'invalid',
      `scopes: ${JSON.stringify(bad)} is not a scope (resource:action)`,
      'scopes',
      'scopes',
    );
  if (scopes.length > MAX_SCOPES)
    throw new ServiceError('invalid', `scopes: at most ${MAX_SCOPES}`, 'scopes', 'scopes');
  const known = ctx.scopes();
  const unknown = scopes.find((s) => !Object.hasOwn(known, s));
  if (unknown !== undefined) {
    const profile = profileOf(ctx);
    // A rest profile's scopes are few and stated in its own file: the refusal names them.
    const where =
      profile.kind === 'rest' ? `; profile ${profile.name}'s scopes are ${Object.keys(known).join(', ')}` : '';
    throw new ServiceError('invalid', `scopes: unknown scope ${unknown}${where}`, 'unknown_scope', 'scopes');
  }
  return [...new Set(scopes)];
}

// ---------------------------------------------------------------------------------------------
// Who may act on which key

interface SessionUser {
  id: number;
  organizationId: number;
  orgRole: 'OWNER' | 'MEMBER';
}

async function actingUser(q: Queryable, ctx: ServiceContext): Promise<SessionUser | null> {
  if (ctx.actor.kind !== 'user') return null;
  const row = await userRow(q, ctx.actor.id);
  if (!row) throw new ServiceError('forbidden', `no user ${ctx.actor.id}`, 'no_user');
  return { id: row.id, organizationId: row.organization_id, orgRole: row.org_role };
}

/**
 * A user (a session of the web app) acts within their organization only: its owners on any key,
 * members on the keys they made or own (the rule of DELETE /api-keys). Any other key looks absent.
 */
function assertMayManage(user: SessionUser | null, k: Row | null, id: number): asserts k is Row {
  const mine =
    k &&
    user &&
    k.organization_id === user.organizationId &&
    (user.orgRole === 'OWNER' || k.created_by === user.id || k.user_id === user.id);
  if (!k || (user && !mine)) throw new ServiceError('not_found', `no key ${id}`, 'no_key');
}

// ---------------------------------------------------------------------------------------------
// Operations

export interface CreateKeyInput {
  /** A key type of the context's profile. */
  type: string;
  name: string;
  scopes?: string[];
  /** workspace keys */
  workspaceId?: number;
  role?: Role;
  /** personal keys (a user actor: themselves) */
  userId?: number;
  /** partner and consumer keys (a user actor: their own organization) */
  organizationId?: number;
  /** The member who made the key; a workspace key's role is capped by their role there. A user actor: themselves. */
  createdBy?: number;
  expiresAt?: Date | null;
  metadata?: KeyMetadata | null;
  /** A secret made elsewhere (a secret store's, for `keygate apply`); absent: a new one. Of the key's type. */
  secret?: string;
}

/** Where a new key belongs: its organization and, by type, its workspace and role or its user. */
interface KeyBinding {
  organizationId: number;
  workspaceId: number | null;
  userId: number | null;
  role: Role | null;
  createdBy: number | null;
}

/** A workspace key: the workspace's organization, its role capped by its creator's role there. */
async function workspaceBinding(
  q: Queryable,
  input: CreateKeyInput,
  user: SessionUser | null,
  createdBy: number | null,
): Promise<KeyBinding> {
  if (input.workspaceId === undefined)
    throw new ServiceError(
      'invalid',
      'A workspace id is required to create a workspace key.',
      'workspace_required',
      'workspaceId',
    );
  if (input.userId !== undefined || input.organizationId !== undefined)
    throw new ServiceError('invalid', 'a workspace key is bound to its workspace only', 'binding');
  const wsOrg = await organizationOfLiveWorkspace(q, input.workspaceId);
  if (wsOrg === undefined || (user && wsOrg !== user.organizationId)) {
    throw new ServiceError(
      user ? 'forbidden' : 'not_found',
      user ? 'No access to the workspace for this key.' : `no workspace ${input.workspaceId}`,
      'no_workspace_access',
      'workspaceId',
    );
  }
  const workspaceId = input.workspaceId;
  const binding = { organizationId: wsOrg, workspaceId, userId: null, createdBy };
  if (createdBy === null) return { ...binding, role: input.role ?? 'ADMIN' };
  // A workspace key's role is capped by its creator's role in that workspace (docs/decisions.md section 2).
  const creatorRole = (await membershipRole(q, workspaceId, createdBy)) as Role | undefined;
  if (creatorRole === undefined) {
    throw new ServiceError(
      'forbidden',
      user
        ? 'No access to the workspace for this key.'
        : `user ${createdBy} is not a member of workspace ${workspaceId}`,
      'no_workspace_access',
      'createdBy',
    );
  }
  if (input.role && roleRank(input.role) > roleRank(creatorRole)) {
    throw new ServiceError(
      'forbidden',
      user
        ? "Cannot create a key with a role above the creator's."
        : `role ${input.role} is above the ${creatorRole} role of user ${createdBy}`,
      'role_above_creator',
      'role',
    );
  }
  return { ...binding, role: input.role ?? (roleRank('ADMIN') > roleRank(creatorRole) ? creatorRole : 'ADMIN') };
}

/** A personal key: its user (a user actor: themselves), who is also its creator. */
async function personalBinding(q: Queryable, input: CreateKeyInput, user: SessionUser | null): Promise<KeyBinding> {
  const userId = user ? user.id : (input.userId ?? null);
  if (userId === null) throw new ServiceError('invalid', 'a personal key needs its user', 'user_required', 'userId');
  if (user && input.userId !== undefined && input.userId !== user.id)
    throw new ServiceError('forbidden', 'a personal key is made by its own user', 'not_own_user', 'userId');
  const organizationId = await organizationOfUser(q, userId);
  if (organizationId === undefined) throw new ServiceError('not_found', `no user ${userId}`, 'no_user', 'userId');
  return { organizationId, workspaceId: null, userId, role: null, createdBy: userId };
}

/**
 * A partner or a consumer key: an organization (a user actor: their own, and only its owners may make
 * one). A consumer is an organization without workspaces (docs/profiles.md).
 */
async function organizationBinding(
  q: Queryable,
  input: CreateKeyInput,
  user: SessionUser | null,
  createdBy: number | null,
): Promise<KeyBinding> {
  // A partner key sees every account of the organization: only its owners may make one.
  if (user && user.orgRole !== 'OWNER')
    throw new ServiceError(
      'forbidden',
      `Only organization owners can create ${input.type} keys.`,
      'role_above_creator',
    );
  const orgId = user ? user.organizationId : input.organizationId;
  if (orgId === undefined)
    throw new ServiceError(
      'invalid',
      `a ${input.type} key needs its organization`,
      'organization_required',
      'organizationId',
    );
  if (!(await organizationExists(q, orgId)))
    throw new ServiceError('not_found', `no organization ${orgId}`, 'no_organization', 'organizationId');
  return { organizationId: orgId, workspaceId: null, userId: null, role: null, createdBy };
}

async function keyBinding(
  q: Queryable,
  input: CreateKeyInput,
  rule: KeyTypeRule,
  user: SessionUser | null,
): Promise<KeyBinding> {
  const createdBy = user ? user.id : (input.createdBy ?? null);
  const binding = bindingKind(rule);
  if (binding === 'workspace') return workspaceBinding(q, input, user, createdBy);
  if (input.workspaceId !== undefined || input.role !== undefined) {
    throw new ServiceError(
      'forbidden',
      `A ${input.type} key is not bound to a workspace or a role.`,
      'no_workspace_access',
      input.workspaceId !== undefined ? 'workspaceId' : 'role',
    );
  }
  if (binding === 'user') return personalBinding(q, input, user);
  if (rule.model === 'consumer' && (input.userId !== undefined || input.createdBy !== undefined))
    throw new ServiceError(
      'invalid',
      `a ${input.type} key belongs to its consumer (an organization), not to a user`,
      'binding',
      input.userId !== undefined ? 'userId' : 'createdBy',
    );
  return organizationBinding(q, input, user, createdBy);
}

export async function createKey(ctx: ServiceContext, input: CreateKeyInput): Promise<{ key: KeyView; secret: string }> {
  const rule = checkKeyType(ctx, input.type);
  const name = checkName(input.name);
  const scopeless = !holdsScopes(rule);
  const scopes = scopeless ? [] : checkScopes(ctx, input.scopes ?? []);
  if (scopeless && input.scopes?.length)
    throw new ServiceError('invalid', `a ${input.type} key takes no scopes`, 'scopes', 'scopes');
  if (input.role !== undefined && !ROLES.includes(input.role))
    throw new ServiceError('invalid', `role must be one of ${ROLES.join(', ')}`, 'role', 'role');
  const expiresAt = input.expiresAt === undefined ? null : checkExpiresAt(input.expiresAt);
  const metadata = input.metadata === undefined ? null : checkMetadata(input.metadata);
  if (input.secret !== undefined && keyTypeIn(input.secret, [rule]) !== input.type)
    throw new ServiceError('invalid', `secret: not a ${input.type} key's secret`, 'secret', 'secret');
  const secret = input.secret ?? generateSecret(rule.prefix);
  const now = nowOf(ctx);
  const created = await ctx.db.tx(async (q) => {
    const b = await keyBinding(q, input, rule, await actingUser(q, ctx));
    const id = await insertKey(q, {
      ...b,
      type: input.type,
      keyHash: hashSecret(ctx.pepper, secret),
      hint: hintOf(secret, rule.prefix),
      name,
      scopes,
      createdAt: now,
      expiresAt,
      metadata: metadata === null ? null : JSON.stringify(metadata),
    });
    const view = keyView((await keyRow(q, id))!, now);
    await recordAudit(q, ctx, {
      action: 'key.create',
      targetType: 'key',
      targetIds: [view.id],
      organizationId: b.organizationId,
      after: view,
    });
    await keyCreated(q, ctx, view);
    return view;
  });
  // A new key needs no eviction, but an organization whose keys changed is re-read everywhere: cheap, and exact.
  await ctx.accessChanged(created.organizationId);
  return { key: created, secret };
}

/** Keys in id order. A user actor sees their own organization's keys only. Reading is not audited. */
export async function listKeys(ctx: ServiceContext, f: KeyFilter = {}): Promise<KeyView[]> {
  const user = await actingUser(ctx.db, ctx);
  const now = nowOf(ctx);
  if (f.limit !== undefined && (!Number.isInteger(f.limit) || f.limit < 1 || f.limit > 1000))
    throw new ServiceError('invalid', 'limit must be 1 to 1000', 'limit', 'limit');
  const rows = await keyRows(ctx.db, { ...f, inOrganization: user?.organizationId }, now);
  return rows.map((r) => keyView(r, now));
}

export async function getKey(ctx: ServiceContext, id: number): Promise<KeyView> {
  const user = await actingUser(ctx.db, ctx);
  const k = await keyRow(ctx.db, id);
  assertMayManage(user, k, id);
  return keyView(k, nowOf(ctx));
}

/**
 * One change to a key under its row lock, audited with its before and after, then the access bump.
 * `change` writes it (or refuses) in the transaction, given the locked row.
 */
async function changeKey(
  ctx: ServiceContext,
  id: number,
  action: string,
  change: (q: Queryable, k: Row, now: Date) => Promise<void>,
): Promise<KeyView> {
  const now = nowOf(ctx);
  const after = await ctx.db.tx(async (q) => {
    const user = await actingUser(q, ctx);
    const k = await keyRow(q, id, true);
    assertMayManage(user, k, id);
    const before = keyView(k, now);
    await change(q, k, now);
    const view = keyView((await keyRow(q, id))!, now);
    await recordAudit(q, ctx, {
      action,
      targetType: 'key',
      targetIds: [id],
      organizationId: k.organization_id,
      before,
      after: view,
    });
    await keyChanged(q, ctx, action, before, view);
    return view;
  });
  await ctx.accessChanged(after.organizationId);
  return after;
}

/** Revoke: every secret of the key stops at once; the first revocation time stays. */
export async function revokeKey(ctx: ServiceContext, id: number): Promise<KeyView> {
  return changeKey(ctx, id, 'key.revoke', (q, _k, now) => revokeKeyRow(q, id, now));
}

export interface UpdateKeyInput {
  name?: string;
  /** null: never expires. */
  expiresAt?: Date | null;
  /** null: none. */
  metadata?: KeyMetadata | null;
}

export async function updateKey(ctx: ServiceContext, id: number, input: UpdateKeyInput): Promise<KeyView> {
  const fields: Parameters<typeof updateKeyRow>[2] = {};
  if (input.name !== undefined) fields.name = checkName(input.name);
  if (input.expiresAt !== undefined) fields.expiresAt = checkExpiresAt(input.expiresAt);
  if (input.metadata !== undefined) {
    const m = checkMetadata(input.metadata);
    fields.metadata = m === null ? null : JSON.stringify(m);
  }
  if (!Object.keys(fields).length)
    throw new ServiceError('invalid', 'nothing to change: give a name, an expiry or metadata', 'empty');
  return changeKey(ctx, id, 'key.update', async (q, k) => {
    if (k.revoked_at) throw new ServiceError('conflict', `key ${id} is revoked`, 'revoked');
    await updateKeyRow(q, id, fields);
  });
}

/**
 * Rotate: a new secret for the same key (same id, scopes, role, metadata, expiry). The replaced secret
 * keeps working until `graceMs` has passed (0: stops at once); a secret still in an earlier grace
 * period stops at once, so at most two secrets live per key.
 */
export async function rotateKey(
  ctx: ServiceContext,
  id: number,
  input: { graceMs?: number } = {},
): Promise<{ key: KeyView; secret: string }> {
  const graceMs = input.graceMs ?? DEFAULT_GRACE_MS;
  if (!Number.isInteger(graceMs) || graceMs < 0 || graceMs > MAX_GRACE_MS) {
    throw new ServiceError('invalid', `grace must be 0 to ${MAX_GRACE_MS / 86_400_000} days`, 'grace', 'grace');
  }
  let secret = '';
  const key = await changeKey(ctx, id, 'key.rotate', async (q, k, now) => {
    if (k.revoked_at) throw new ServiceError('conflict', `key ${id} is revoked`, 'revoked');
    // The new secret takes the prefix the profile in force gives the key's type; a type it does not name
    // has no prefix to take, and a secret of another profile's prefix would never resolve here.
    const rule = keyTypeRule(profileOf(ctx), k.type);
    if (!rule)
      throw new ServiceError(
        'conflict',
        `key ${id} is a ${k.type} key, not of a key type of profile ${profileOf(ctx).name}`,
        'type',
      );
    secret = generateSecret(rule.prefix);
    const keep = graceMs > 0;
    await rotateKeyRow(q, id, {
      keyHash: hashSecret(ctx.pepper, secret),
      hint: hintOf(secret, rule.prefix),
      rotatedAt: now,
      previousKeyHash: keep ? k.key_hash : null,
      previousHint: keep ? k.hint : null,
      previousExpiresAt: keep ? new Date(now.getTime() + graceMs) : null,
    });
  });
  return { key, secret };
}
