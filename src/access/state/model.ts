// The declarative state as keygate holds it: the database's rows read into the document's own shape
// (canonical: defaults omitted, lists in a stable order, metadata's keys sorted), each entity with the
// row id it came from. `keygate export` prints the document; diff and apply normalize the file to the
// same canonical form and compare field by field, so that a file exported and applied is no change.
import type { Queryable } from '../../db/types.js';
import type { Plans } from '../../config/plans.js';
import { planSchema } from '../../config/plans.js';
import { isoOrNull } from '../../db/time.js';
import { keyRows } from '../service/queries.js';
import { adminTokenRows } from '../service/admin-token-queries.js';
import { endpointRows } from '../events/queries.js';
import type {
  AdminTokenDoc,
  KeyDoc,
  KeyLimitsDoc,
  MemberDoc,
  OrganizationDoc,
  OrgLimitsDoc,
  StateDocument,
  UserDoc,
  WebhookDoc,
} from './schema.js';
import { STATE_VERSION } from './schema.js';
import { stateMembershipRows, stateOrganizationRows, stateUserRows, stateWorkspaceRows } from './queries.js';

/** Byte order, the same on every machine (localeCompare is not), so exports diff minimally. */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** An email as identity: the database's unique index is on lower(email). */
export const emailKey = (email: string): string => email.toLowerCase();

/** A JSON value with every object's keys sorted: equal values print equal. */
export function canonicalJson(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalJson);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort(byText)
        .map((k) => [k, canonicalJson((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/** Whether two canonical values are the same. */
export const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** An object without its undefined fields, or undefined when none is left (an absent `limits`). */
function present<T extends object>(o: T): T | undefined {
  const kept = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as T;
  return Object.keys(kept).length ? kept : undefined;
}

export function canonicalOrgLimits(l: OrgLimitsDoc | undefined): OrgLimitsDoc | undefined {
  return l && present({ read: l.read, write: l.write, bulk: l.bulk, monthlyQuota: l.monthlyQuota });
}

export function canonicalKeyLimits(l: KeyLimitsDoc | undefined): KeyLimitsDoc | undefined {
  return l && present({ read: l.read, write: l.write, bulk: l.bulk });
}

/** An organization's own fields (its lists apart): no plan is an absent one, flags always written. */
export type OrgFields = Pick<OrganizationDoc, 'name' | 'plan' | 'apiAccess' | 'paused' | 'limits'>;

export function canonicalOrg(o: OrganizationDoc): OrgFields {
  return present({
    name: o.name,
    plan: o.plan ?? undefined,
    apiAccess: o.apiAccess ?? true,
    paused: o.paused ?? false,
    limits: canonicalOrgLimits(o.limits),
  }) as OrgFields;
}

/** A key without `secretFrom` (how a secret is given is not state). */
export function canonicalKey(k: KeyDoc): KeyDoc {
  return present({
    name: k.name,
    type: k.type,
    workspace: k.type === 'workspace' ? k.workspace : undefined,
    role: k.type === 'workspace' ? (k.role ?? 'ADMIN') : undefined,
    user: k.type === 'personal' ? k.user : undefined,
    scopes: k.type === 'partner' ? undefined : [...new Set(k.scopes ?? [])].sort(byText),
    limits: canonicalKeyLimits(k.limits),
    metadata: k.metadata === undefined ? undefined : (canonicalJson(k.metadata) as Record<string, unknown>),
    expiresAt: k.expiresAt === undefined ? undefined : new Date(k.expiresAt).toISOString(),
  }) as KeyDoc;
}

export function canonicalWebhook(w: WebhookDoc): WebhookDoc {
  return {
    url: w.url,
    description: w.description ?? '',
    eventTypes: [...new Set(w.eventTypes ?? [])].sort(byText),
    enabled: w.enabled ?? true,
  };
}

/** The plans as exported: by name, each plan's fields in the schema's order. */
export function canonicalPlans(plans: Plans): Plans {
  const fields = Object.keys(planSchema.shape);
  return Object.fromEntries(
    Object.keys(plans)
      .sort(byText)
      .map((id) => [
        id,
        Object.fromEntries(
          fields
            .filter((f) => plans[id][f as keyof Plans[string]] !== undefined)
            .map((f) => [f, plans[id][f as keyof Plans[string]]]),
        ),
      ]),
  ) as Plans;
}

// ---------------------------------------------------------------------------------------------
// The database's state

export interface Held<D> {
  id: number;
  doc: D;
}

export interface HeldMember extends Held<MemberDoc> {
  /** The member's user id (`id` is the workspace's). */
  userId: number;
}

export interface HeldWorkspace extends Held<{ name: string }> {
  members: HeldMember[];
}

export interface HeldOrg extends Held<OrgFields> {
  users: Held<UserDoc>[];
  workspaces: HeldWorkspace[];
  keys: Held<KeyDoc>[];
}

export interface HeldState {
  orgs: HeldOrg[];
  adminTokens: Held<AdminTokenDoc>[];
  webhooks: Held<WebhookDoc>[];
  /** Every user by lower-cased email, whatever its organization (emails are unique across them). */
  usersByEmail: Map<string, { id: number; organizationId: number }>;
}

const limitOf = (v: unknown) => (v === null || v === undefined ? undefined : Number(v));

/**
 * Every access row an operator manages, read with `q` (the apply's transaction: what it plans
 * against is what it changes). Revoked keys and admin tokens, deleted workspaces and a deleted
 * workspace's keys are history, not state, and are left out.
 */
export async function readState(q: Queryable, now: Date): Promise<HeldState> {
  const [orgRows, userRows, wsRows, memberRows, keys, tokens, hooks] = [
    await stateOrganizationRows(q),
    await stateUserRows(q),
    await stateWorkspaceRows(q),
    await stateMembershipRows(q),
    await keyRows(q, {}, now),
    await adminTokenRows(q, false),
    await endpointRows(q, 0, 2_147_483_647),
  ];
  const orgs = new Map<number, HeldOrg>();
  for (const o of orgRows) {
    orgs.set(o.id, {
      id: o.id,
      doc: canonicalOrg({
        name: o.name,
        plan: o.plan,
        apiAccess: o.api_access,
        paused: o.paused,
        limits: {
          read: limitOf(o.limit_read),
          write: limitOf(o.limit_write),
          bulk: limitOf(o.limit_bulk),
          monthlyQuota: o.monthly_quota_off ? 'none' : limitOf(o.monthly_quota),
        },
      }),
      users: [],
      workspaces: [],
      keys: [],
    });
  }
  const users = new Map<number, Held<UserDoc>>();
  const usersByEmail = new Map<string, { id: number; organizationId: number }>();
  for (const u of userRows) {
    const held = { id: u.id, doc: { email: u.email, role: u.org_role } };
    users.set(u.id, held);
    usersByEmail.set(emailKey(u.email), { id: u.id, organizationId: u.organization_id });
    orgs.get(u.organization_id)?.users.push(held);
  }
  const workspaces = new Map<number, HeldWorkspace>();
  for (const w of wsRows) {
    const held = { id: w.id, doc: { name: w.name }, members: [] };
    workspaces.set(w.id, held);
    orgs.get(w.organization_id)?.workspaces.push(held);
  }
  for (const m of memberRows) {
    const u = users.get(m.user_id);
    if (u)
      workspaces
        .get(m.workspace_id)
        ?.members.push({ id: m.workspace_id, userId: u.id, doc: { email: u.doc.email, role: m.role } });
  }
  for (const k of keys) {
    if (k.revoked_at) continue;
    const ws = k.workspace_id === null ? undefined : workspaces.get(k.workspace_id);
    if (k.type === 'workspace' && !ws) continue;
    orgs.get(k.organization_id)?.keys.push({
      id: k.id,
      doc: canonicalKey({
        name: k.name,
        type: k.type,
        workspace: ws?.doc.name,
        role: k.role ?? undefined,
        user: k.user_id === null ? undefined : users.get(k.user_id)?.doc.email,
        scopes: k.scopes,
        limits: { read: limitOf(k.limit_read), write: limitOf(k.limit_write), bulk: limitOf(k.limit_bulk) },
        metadata: k.metadata ?? undefined,
        expiresAt: isoOrNull(k.expires_at) ?? undefined,
      }),
    });
  }
  return {
    orgs: [...orgs.values()],
    adminTokens: tokens.map((t) => ({ id: t.id, doc: { name: t.name, role: t.role } })),
    webhooks: hooks.map((w) => ({
      id: w.id,
      doc: canonicalWebhook({ url: w.url, description: w.description, eventTypes: w.event_types, enabled: w.enabled }),
    })),
    usersByEmail,
  };
}

const byName = <T extends { id: number; doc: { name: string } }>(a: T, b: T) =>
  byText(a.doc.name, b.doc.name) || a.id - b.id;
const byEmail = <T extends { doc: { email: string } }>(a: T, b: T) =>
  byText(emailKey(a.doc.email), emailKey(b.doc.email));

/** The document of a database's state: what `keygate export` writes. */
export function documentOf(state: HeldState, plans: Plans): StateDocument {
  return {
    version: STATE_VERSION,
    plans: canonicalPlans(plans),
    organizations: [...state.orgs].sort(byName).map((o) => ({
      ...o.doc,
      users: [...o.users].sort(byEmail).map((u) => u.doc),
      workspaces: [...o.workspaces].sort(byName).map((w) => ({
        name: w.doc.name,
        members: [...w.members].sort(byEmail).map((m) => m.doc),
      })),
      keys: [...o.keys].sort(byName).map((k) => k.doc),
    })),
    adminTokens: [...state.adminTokens].sort(byName).map((t) => t.doc),
    webhooks: [...state.webhooks].sort((a, b) => byText(a.doc.url, b.doc.url) || a.id - b.id).map((w) => w.doc),
  };
}
