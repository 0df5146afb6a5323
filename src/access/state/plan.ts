// What applying a document would change: the file's entities matched to the database's by their
// natural keys (docs/declarative-state.md, Identity), compared field by field in canonical form, each
// difference a Change whose `run` makes it through the service layer inside the apply's transaction.
// Every mistake of the file is collected (one line each, naming the field) before anything runs.
import type { Queryable } from '../../db/types.js';
import type { Plans } from '../../config/plans.js';
import { nowOf, ServiceError, type ServiceContext } from '../service/context.js';
import { recordAudit } from '../service/audit.js';
import { createKey, METADATA_MAX_BYTES, profileOf, revokeKey, updateKey } from '../service/keys.js';
import { setKeyLimits, setOrganizationLimits, type LimitsChange } from '../service/limits.js';
import { deleteWorkspace, updateOrganization, type OrganizationPatch } from '../service/organizations.js';
import { createAdminToken, revokeAdminToken } from '../service/admin-tokens.js';
import { checkUrl, createEndpoint, updateEndpoint } from '../events/endpoints.js';
import { keyTypeIn } from '../secrets.js';
import { bindingOf, holdsScopes, keyTypeRule, keyTypesOf, type KeyTypeRule } from '../key-types.js';
import { unstorableTextAt } from '../../db/storable.js';
import type { KeyDoc, OrganizationDoc, StateDocument, WebhookDoc } from './schema.js';
import {
  canonicalKey,
  canonicalOrg,
  canonicalPlans,
  canonicalWebhook,
  emailKey,
  same,
  type Held,
  type HeldOrg,
  type HeldState,
  type OrgFields,
} from './model.js';
import {
  deleteEndpoint,
  deleteMembership,
  insertMembership,
  insertOrganization,
  insertUser,
  insertWorkspace,
  updateMembershipRole,
  updateUserRole,
} from './queries.js';

export interface FieldChange {
  field: string;
  from?: unknown;
  to?: unknown;
}

export type ChangeKind = 'create' | 'update' | 'revoke' | 'delete';

/** A secret made by the apply, printed once: a key's, an admin token's or a webhook endpoint's. */
export interface Printed {
  what: string;
  secret: string;
}

/** What a change runs with: the apply's context (its database is the transaction) and the ids so far. */
export interface Run {
  ctx: ServiceContext;
  q: Queryable;
  ids: Ids;
  printed: Printed[];
}

export interface Change {
  kind: ChangeKind;
  /** `key "ci" of organization "Acme"` */
  what: string;
  fields: FieldChange[];
  run(r: Run): Promise<void>;
}

export interface StatePlan {
  changes: Change[];
  /** What the file lacks and the apply leaves as it is (without --prune, or never deleted). */
  kept: string[];
  /** `organizations[1].keys[0].scopes[2]: unknown scope "acounts:read"`, without the file's name. */
  mistakes: string[];
  ids: Ids;
}

/** The row id of each entity by natural key: those found, then those the apply creates. */
export class Ids {
  readonly orgs = new Map<string, number>();
  readonly users = new Map<string, number>();
  private readonly ws = new Map<string, number>();
  workspace(org: string, name: string): number {
    return this.ws.get(`${org}\n${name}`)!;
  }
  setWorkspace(org: string, name: string, id: number): void {
    this.ws.set(`${org}\n${name}`, id);
  }
}

export interface PlanOptions {
  prune: boolean;
  /** The environment `secretFrom` reads; absent (diff): not checked. */
  env?: Record<string, string | undefined>;
}

const q = JSON.stringify;

/** The fields of `to` that differ from `from` (all of them when there is no `from`). */
function fieldChanges(from: object | undefined, to: object, fields: readonly string[]): FieldChange[] {
  const f = from as Record<string, unknown> | undefined;
  const t = to as Record<string, unknown>;
  return fields
    .filter((k) => (f ? !same(f[k], t[k]) : t[k] !== undefined))
    .map((k) => ({ field: k, ...(f ? { from: f[k] } : {}), to: t[k] }));
}

/** The one entity of `held` a natural key names; two are a mistake (the file cannot say which). */
function matchOne<T>(
  held: T[],
  matches: (h: T) => boolean,
  at: string,
  what: string,
  mistakes: string[],
): T | undefined {
  const found = held.filter(matches);
  if (found.length > 1) mistakes.push(`${at}: ${found.length} ${what} in the database; rename all but one first`);
  return found[0];
}

/** Names that repeat in a list: each repeat is a mistake naming both places. */
function duplicates<T>(items: T[], key: (t: T) => string, at: (i: number) => string, mistakes: string[]): void {
  const first = new Map<string, number>();
  items.forEach((item, i) => {
    const k = key(item);
    if (first.has(k)) mistakes.push(`${at(i)}: duplicate of ${at(first.get(k)!)}`);
    else first.set(k, i);
  });
}

const limitsChange = (l: Record<string, unknown> | undefined, fields: readonly string[]): LimitsChange =>
  Object.fromEntries(fields.map((f) => [f, l?.[f] ?? null])) as LimitsChange;

function checkPlans(doc: StateDocument, inForce: Plans, mistakes: string[]): void {
  if (!doc.plans) return;
  const file = canonicalPlans(doc.plans as Plans);
  const held = canonicalPlans(inForce);
  const lives = 'plans live in PLANS_FILE';
  for (const id of Object.keys(file)) {
    if (!(id in held)) {
      mistakes.push(`plans.${id}: not a plan of PLANS_FILE; ${lives}`);
      continue;
    }
    const fields = new Set([...Object.keys(file[id]), ...Object.keys(held[id])]);
    for (const f of fields) {
      const a = (file[id] as Record<string, unknown>)[f];
      const b = (held[id] as Record<string, unknown>)[f];
      if (!same(a, b))
        mistakes.push(
          `plans.${id}.${f}: ${a === undefined ? 'absent' : q(a)}, PLANS_FILE has ${b === undefined ? 'none' : q(b)}; ${lives}`,
        );
    }
  }
  for (const id of Object.keys(held)) if (!(id in file)) mistakes.push(`plans: lacks "${id}" of PLANS_FILE; ${lives}`);
}

/** A key's fields that no operation changes: a new value needs a new key (a new name). */
const KEY_FIXED = ['type', 'workspace', 'role', 'user', 'scopes'] as const;
const KEY_CHANGEABLE = ['limits', 'metadata', 'expiresAt'] as const;
const ORG_FIELDS = ['plan', 'apiAccess', 'paused', 'limits'] as const;

/** The key type of the profile in force a key names, or its mistake naming the profile's types. */
function keyRule(ctx: ServiceContext, k: KeyDoc, at: string, m: string[]): KeyTypeRule | undefined {
  const profile = profileOf(ctx);
  const rule = keyTypeRule(profile, k.type);
  if (!rule)
    m.push(
      `${at}.type: no key type ${q(k.type)} in profile ${profile.name}; its key types are ${keyTypesOf(profile)
        .map((t) => t.name)
        .join(', ')}`,
    );
  return rule;
}

/**
 * What the file says of a key that the schema cannot: its type is the profile's, its binding fits its
 * type (a workspace, a user, or the organization alone: a partner or a consumer key), its scopes are known.
 */
function checkKey(ctx: ServiceContext, k: KeyDoc, at: string, org: OrganizationDoc, o: PlanOptions, m: string[]) {
  const rule = keyRule(ctx, k, at, m);
  const binding = rule && bindingOf(rule);
  const wsNames = new Set((org.workspaces ?? []).map((w) => w.name));
  const emails = new Set((org.users ?? []).map((u) => emailKey(u.email)));
  const stray = (f: keyof KeyDoc) => k[f] !== undefined && m.push(`${at}.${f}: a ${k.type} key takes no ${f}`);
  if (binding === 'workspace') {
    if (k.workspace === undefined) m.push(`${at}.workspace: a ${k.type} key needs its workspace`);
    else if (!wsNames.has(k.workspace))
      m.push(`${at}.workspace: no workspace ${q(k.workspace)} in this organization's workspaces`);
    stray('user');
  } else if (binding) {
    stray('workspace');
    stray('role');
    if (binding === 'user') {
      if (k.user === undefined) m.push(`${at}.user: a ${k.type} key needs its user`);
      else if (!emails.has(emailKey(k.user))) m.push(`${at}.user: no user ${q(k.user)} in this organization's users`);
    } else stray('user');
  }
  if (rule && !holdsScopes(rule) && k.scopes?.length) m.push(`${at}.scopes: a ${k.type} key takes no scopes`);
  const known = ctx.scopes();
  (k.scopes ?? []).forEach((s, i) => {
    if (!(s in known)) m.push(`${at}.scopes[${i}]: unknown scope ${q(s)}`);
  });
  if (k.metadata !== undefined) {
    const bytes = Buffer.byteLength(JSON.stringify(k.metadata));
    if (bytes > METADATA_MAX_BYTES) m.push(`${at}.metadata: ${bytes} bytes as JSON; at most ${METADATA_MAX_BYTES}`);
    const bad = unstorableTextAt(k.metadata);
    if (bad) m.push(`${at}.metadata${bad.field ? `.${bad.field}` : ''}: holds a NUL character or a lone surrogate`);
  }
  if (k.secretFrom !== undefined && o.env) {
    const secret = o.env[k.secretFrom];
    if (secret === undefined) m.push(`${at}.secretFrom: the environment has no ${k.secretFrom}`);
    else if (keyTypeIn(secret, keyTypesOf(profileOf(ctx))) !== k.type)
      m.push(`${at}.secretFrom: ${k.secretFrom} does not hold a ${k.type} key's secret`);
  }
}

/**
 * The audit row of a change no service operation makes (creating organizations, users, workspaces, ...)
 * and, as the service layer does after each change, the organization's access bump (deferred to the commit).
 */
async function audited(r: Run, action: string, targetType: string, id: number, org: number | null, o: object) {
  await recordAudit(r.q, r.ctx, { action, targetType, targetIds: [id], organizationId: org, ...o });
  if (org !== null) await r.ctx.accessChanged(org);
}

/** Turns a refusal of the service layer into the file's mistake, naming the entity's place. */
async function at<T>(where: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ServiceError)
      throw new ServiceError(err.kind, `${where}: ${err.message}`, err.reason, err.field);
    throw err;
  }
}

class Planner {
  readonly changes: Change[] = [];
  readonly kept: string[] = [];
  readonly mistakes: string[] = [];
  readonly ids = new Ids();
  constructor(
    private readonly ctx: ServiceContext,
    private readonly held: HeldState,
    private readonly o: PlanOptions,
  ) {}

  private add(kind: ChangeKind, what: string, fields: FieldChange[], run: (r: Run) => Promise<void>) {
    this.changes.push({ kind, what, fields, run: (r) => at(what, () => run(r)) });
  }

  /** Each repeat of a list's identifying field (`organizations[2].name`) is a mistake naming both places. */
  private unique<T>(items: T[], list: string, field: keyof T & string, norm: (v: string) => string = (v) => v) {
    duplicates(
      items,
      (t) => norm(String(t[field])),
      (i) => `${list}[${i}].${field}`,
      this.mistakes,
    );
  }

  /** What the file lacks: pruned with --prune, else left and listed. */
  private lacking(what: string, verb: 'revoke' | 'delete', run: (r: Run) => Promise<void>) {
    if (this.o.prune) this.add(verb, what, [], run);
    else this.kept.push(`${what} (--prune would ${verb} it)`);
  }

  plan(doc: StateDocument): StatePlan {
    checkPlans(doc, this.ctx.plans(), this.mistakes);
    const orgs = doc.organizations ?? [];
    this.unique(orgs, 'organizations', 'name');
    const allUsers = orgs.flatMap((o, i) =>
      (o.users ?? []).map((u, j) => ({ u, at: `organizations[${i}].users[${j}]` })),
    );
    duplicates(
      allUsers,
      (x) => emailKey(x.u.email),
      (i) => `${allUsers[i].at}.email`,
      this.mistakes,
    );
    for (const h of this.held.orgs) if (!this.ids.orgs.has(h.doc.name)) this.ids.orgs.set(h.doc.name, h.id);
    orgs.forEach((o, i) => this.organization(o, `organizations[${i}]`));
    const named = new Set(orgs.map((o) => o.name));
    for (const h of this.held.orgs)
      if (!named.has(h.doc.name)) this.kept.push(`organization ${q(h.doc.name)} (organizations are never deleted)`);
    this.adminTokens(doc);
    this.webhooks(doc);
    return { changes: this.changes, kept: this.kept, mistakes: this.mistakes, ids: this.ids };
  }

  private organization(o: OrganizationDoc, path: string) {
    const what = `organization ${q(o.name)}`;
    if (o.plan != null && !(o.plan in this.ctx.plans()))
      this.mistakes.push(`${path}.plan: unknown plan ${q(o.plan)} (not in PLANS_FILE)`);
    const h = matchOne(
      this.held.orgs,
      (x) => x.doc.name === o.name,
      `${path}.name`,
      'organizations so named',
      this.mistakes,
    );
    const to = canonicalOrg(o);
    if (!h) {
      this.add('create', what, fieldChanges(undefined, to, ORG_FIELDS), async (r) => {
        const id = await insertOrganization(r.q, {
          name: o.name,
          plan: to.plan ?? null,
          apiAccess: to.apiAccess!,
          paused: to.paused!,
          read: to.limits?.read ?? null,
          write: to.limits?.write ?? null,
          bulk: to.limits?.bulk ?? null,
          monthlyQuota: to.limits?.monthlyQuota ?? null,
        });
        r.ids.orgs.set(o.name, id);
        await audited(r, 'organization.create', 'organization', id, id, { after: { id, ...to } });
      });
    } else this.updateOrganization(h, to, what);
    this.users(o, h, path, what);
    this.workspaces(o, h, path, what);
    this.keys(o, h, path, what);
  }

  private updateOrganization(h: HeldOrg, to: OrgFields, what: string) {
    const fields = fieldChanges(h.doc, to, ORG_FIELDS);
    if (!fields.length) return;
    this.add('update', what, fields, async (r) => {
      const patch: OrganizationPatch = {};
      for (const f of fields) {
        if (f.field === 'plan') patch.plan = to.plan ?? null;
        if (f.field === 'apiAccess') patch.apiAccess = to.apiAccess;
        if (f.field === 'paused') patch.paused = to.paused;
      }
      if (Object.keys(patch).length) await updateOrganization(r.ctx, h.id, patch);
      if (fields.some((f) => f.field === 'limits'))
        await setOrganizationLimits(r.ctx, h.id, limitsChange(to.limits, ['read', 'write', 'bulk', 'monthlyQuota']));
    });
  }

  private users(o: OrganizationDoc, h: HeldOrg | undefined, path: string, orgWhat: string) {
    const users = o.users ?? [];
    users.forEach((u, j) => {
      const at = `${path}.users[${j}]`;
      const what = `user ${q(u.email)} of ${orgWhat}`;
      const found = this.held.usersByEmail.get(emailKey(u.email));
      if (found && found.organizationId !== h?.id) {
        this.mistakes.push(
          `${at}.email: ${q(u.email)} is a user of organization ${found.organizationId}; users do not move between organizations`,
        );
        return;
      }
      const cur = h?.users.find((x) => x.id === found?.id);
      if (cur) {
        this.ids.users.set(emailKey(u.email), cur.id);
        if (cur.doc.role !== u.role)
          this.add('update', what, [{ field: 'role', from: cur.doc.role, to: u.role }], async (r) => {
            await updateUserRole(r.q, cur.id, u.role);
            await audited(r, 'user.update', 'user', cur.id, h!.id, {
              before: { id: cur.id, ...cur.doc },
              after: { id: cur.id, ...u },
            });
          });
        return;
      }
      this.add('create', what, [{ field: 'role', to: u.role }], async (r) => {
        const orgId = r.ids.orgs.get(o.name)!;
        const id = await insertUser(r.q, orgId, u.email, u.role);
        r.ids.users.set(emailKey(u.email), id);
        await audited(r, 'user.create', 'user', id, orgId, { after: { id, ...u } });
      });
    });
    const named = new Set(users.map((u) => emailKey(u.email)));
    for (const x of h?.users ?? [])
      if (!named.has(emailKey(x.doc.email)))
        this.kept.push(
          `user ${q(x.doc.email)} of ${orgWhat} (users are never deleted; --prune removes their memberships and keys)`,
        );
  }

  private workspaces(o: OrganizationDoc, h: HeldOrg | undefined, path: string, orgWhat: string) {
    const list = o.workspaces ?? [];
    this.unique(list, `${path}.workspaces`, 'name');
    list.forEach((w, j) => {
      const at = `${path}.workspaces[${j}]`;
      const what = `workspace ${q(w.name)} of ${orgWhat}`;
      const cur =
        h && matchOne(h.workspaces, (x) => x.doc.name === w.name, `${at}.name`, 'workspaces so named', this.mistakes);
      if (cur) this.ids.setWorkspace(o.name, w.name, cur.id);
      else
        this.add('create', what, [], async (r) => {
          const orgId = r.ids.orgs.get(o.name)!;
          const id = await insertWorkspace(r.q, orgId, w.name, nowOf(r.ctx));
          r.ids.setWorkspace(o.name, w.name, id);
          await audited(r, 'workspace.create', 'workspace', id, orgId, { after: { id, name: w.name } });
        });
      const members = w.members ?? [];
      this.unique(members, `${at}.members`, 'email', emailKey);
      const emails = new Set((o.users ?? []).map((u) => emailKey(u.email)));
      members.forEach((m, i) => {
        if (!emails.has(emailKey(m.email)))
          this.mistakes.push(`${at}.members[${i}].email: no user ${q(m.email)} in this organization's users`);
        const had = cur?.members.find((x) => emailKey(x.doc.email) === emailKey(m.email));
        if (had && had.doc.role === m.role) return;
        const change = { field: 'role', ...(had ? { from: had.doc.role } : {}), to: m.role };
        this.add(had ? 'update' : 'create', `member ${q(m.email)} of ${what}`, [change], async (r) => {
          const wsId = r.ids.workspace(o.name, w.name);
          const userId = r.ids.users.get(emailKey(m.email))!;
          if (had) await updateMembershipRole(r.q, wsId, userId, m.role);
          else await insertMembership(r.q, wsId, userId, m.role);
          await audited(
            r,
            had ? 'membership.update' : 'membership.create',
            'workspace',
            wsId,
            r.ids.orgs.get(o.name)!,
            { ...(had ? { before: { userId, ...had.doc } } : {}), after: { userId, ...m } },
          );
        });
      });
      const listed = new Set(members.map((m) => emailKey(m.email)));
      for (const x of cur?.members ?? []) {
        if (listed.has(emailKey(x.doc.email))) continue;
        this.lacking(`member ${q(x.doc.email)} of ${what}`, 'delete', async (r) => {
          await deleteMembership(r.q, x.id, x.userId);
          await audited(r, 'membership.delete', 'workspace', x.id, h!.id, { before: { userId: x.userId, ...x.doc } });
        });
      }
    });
  }

  private keys(o: OrganizationDoc, h: HeldOrg | undefined, path: string, orgWhat: string) {
    const keys = o.keys ?? [];
    this.unique(keys, `${path}.keys`, 'name');
    keys.forEach((k, j) => {
      const at = `${path}.keys[${j}]`;
      const what = `key ${q(k.name)} of ${orgWhat}`;
      const found: string[] = [];
      checkKey(this.ctx, k, at, o, this.o, found);
      this.mistakes.push(...found);
      const to = canonicalKey(k);
      const cur =
        h && matchOne(h.keys, (x) => x.doc.name === k.name, `${at}.name`, 'live keys so named', this.mistakes);
      if (!cur) return this.createKey(o, k, to, what);
      // A field already refused (an unknown scope) is not also told it differs from the database's.
      const refused = (field: string) => found.some((m) => m.startsWith(`${at}.${field}`));
      // An email is the same user whatever its case (the database's unique index is on lower(email)).
      const sameUser = (c: FieldChange) => c.field === 'user' && emailKey(String(c.from)) === emailKey(String(c.to));
      for (const f of fieldChanges(cur.doc, to, KEY_FIXED).filter((c) => !refused(c.field) && !sameUser(c)))
        this.mistakes.push(
          `${at}.${f.field}: a key's ${f.field} cannot change (${q(f.from) ?? 'absent'} in the database, ${q(f.to) ?? 'absent'} here); give the key a new name to replace it`,
        );
      const fields = fieldChanges(cur.doc, to, KEY_CHANGEABLE);
      if (!fields.length) return;
      this.add('update', what, fields, async (r) => {
        const changed = new Set(fields.map((f) => f.field));
        if (changed.has('expiresAt') || changed.has('metadata'))
          await updateKey(r.ctx, cur.id, {
            ...(changed.has('expiresAt') ? { expiresAt: to.expiresAt ? new Date(to.expiresAt) : null } : {}),
            ...(changed.has('metadata') ? { metadata: to.metadata ?? null } : {}),
          });
        if (changed.has('limits'))
          await setKeyLimits(r.ctx, cur.id, limitsChange(to.limits, ['read', 'write', 'bulk']));
      });
    });
    const named = new Set(keys.map((k) => k.name));
    for (const x of h?.keys ?? [])
      if (!named.has(x.doc.name))
        this.lacking(`key ${q(x.doc.name)} of ${orgWhat}`, 'revoke', (r) => revokeKey(r.ctx, x.id).then(() => {}));
    // A workspace the file lacks goes after its keys (revoked above, when pruning).
    const wsNamed = new Set((o.workspaces ?? []).map((w) => w.name));
    for (const x of h?.workspaces ?? [])
      if (!wsNamed.has(x.doc.name))
        this.lacking(`workspace ${q(x.doc.name)} of ${orgWhat}`, 'delete', (r) =>
          deleteWorkspace(r.ctx, x.id).then(() => {}),
        );
  }

  private createKey(o: OrganizationDoc, k: KeyDoc, to: KeyDoc, what: string) {
    const fields = fieldChanges(undefined, to, [...KEY_FIXED, ...KEY_CHANGEABLE]);
    if (k.secretFrom) fields.push({ field: 'secretFrom', to: k.secretFrom });
    // checkKey refused a type the profile lacks: no change of such a key ever runs.
    const rule = keyTypeRule(profileOf(this.ctx), to.type);
    const binding = rule && bindingOf(rule);
    this.add('create', what, fields, async (r) => {
      const secret = k.secretFrom ? this.o.env?.[k.secretFrom] : undefined;
      const { key, secret: made } = await createKey(r.ctx, {
        type: to.type,
        name: to.name,
        scopes: to.scopes,
        ...(binding === 'workspace' ? { workspaceId: r.ids.workspace(o.name, to.workspace!), role: to.role } : {}),
        ...(binding === 'user' ? { userId: r.ids.users.get(emailKey(to.user!)) } : {}),
        ...(binding === 'organization' ? { organizationId: r.ids.orgs.get(o.name) } : {}),
        expiresAt: to.expiresAt ? new Date(to.expiresAt) : null,
        metadata: to.metadata ?? null,
        ...(secret !== undefined ? { secret } : {}),
      });
      if (to.limits) await setKeyLimits(r.ctx, key.id, limitsChange(to.limits, ['read', 'write', 'bulk']));
      if (secret === undefined) r.printed.push({ what, secret: made });
    });
  }

  private adminTokens(doc: StateDocument) {
    const tokens = doc.adminTokens ?? [];
    this.unique(tokens, 'adminTokens', 'name');
    tokens.forEach((t, i) => {
      const at = `adminTokens[${i}]`;
      const what = `admin token ${q(t.name)}`;
      const cur = matchOne(
        this.held.adminTokens,
        (x) => x.doc.name === t.name,
        `${at}.name`,
        'active admin tokens so named',
        this.mistakes,
      );
      if (cur && cur.doc.role !== t.role)
        this.mistakes.push(
          `${at}.role: an admin token's role cannot change (${q(cur.doc.role)} in the database); give it a new name to replace it`,
        );
      if (cur) return;
      this.add('create', what, [{ field: 'role', to: t.role }], async (r) => {
        const made = await createAdminToken(r.ctx, t);
        r.printed.push({ what, secret: made.token });
      });
    });
    const named = new Set(tokens.map((t) => t.name));
    for (const x of this.held.adminTokens)
      if (!named.has(x.doc.name))
        this.lacking(`admin token ${q(x.doc.name)}`, 'revoke', (r) => revokeAdminToken(r.ctx, x.id).then(() => {}));
  }

  private webhooks(doc: StateDocument) {
    const hooks = doc.webhooks ?? [];
    this.unique(hooks, 'webhooks', 'url');
    const fields = ['description', 'eventTypes', 'enabled'] as const;
    hooks.forEach((w, i) => {
      const at = `webhooks[${i}]`;
      const what = `webhook ${q(w.url)}`;
      try {
        checkUrl(w.url);
      } catch (err) {
        this.mistakes.push(`${at}.url: ${(err as Error).message.replace(/^url /, '')}`);
      }
      const to = canonicalWebhook(w);
      const cur = matchOne(
        this.held.webhooks,
        (x) => x.doc.url === w.url,
        `${at}.url`,
        'endpoints of this url',
        this.mistakes,
      );
      if (cur) return this.updateWebhook(cur, to, what, fields);
      this.add('create', what, fieldChanges(undefined, to, fields), async (r) => {
        const made = await createEndpoint(r.ctx, to);
        if (!to.enabled) await updateEndpoint(r.ctx, made.endpoint.id, { enabled: false });
        r.printed.push({ what, secret: made.secret });
      });
    });
    const urls = new Set(hooks.map((w) => w.url));
    for (const x of this.held.webhooks)
      if (!urls.has(x.doc.url))
        this.lacking(`webhook ${q(x.doc.url)}`, 'delete', async (r) => {
          await deleteEndpoint(r.q, x.id);
          await audited(r, 'webhook.delete', 'webhook', x.id, null, { before: { id: x.id, ...x.doc } });
        });
  }

  private updateWebhook(cur: Held<WebhookDoc>, to: WebhookDoc, what: string, fields: readonly (keyof WebhookDoc)[]) {
    const changes = fieldChanges(cur.doc, to, fields);
    if (!changes.length) return;
    this.add('update', what, changes, async (r) => {
      await updateEndpoint(
        r.ctx,
        cur.id,
        Object.fromEntries(changes.map((c) => [c.field, to[c.field as keyof WebhookDoc]])),
      );
    });
  }
}

/** The changes applying `doc` to `held` would make, and the file's mistakes (none may run if any). */
export function planState(ctx: ServiceContext, held: HeldState, doc: StateDocument, o: PlanOptions): StatePlan {
  return new Planner(ctx, held, o).plan(doc);
}
