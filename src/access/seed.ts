// The seed loader of docs/decisions.md section 2: strict (an unknown field is an error that names it), applied
// in one transaction (a bad seed changes nothing), idempotent by id. This module writes the access
// tables (organizations, users, workspaces, memberships, keys, sessions); each backend domain writes
// its own tables from its own sections (SeedSections, listed with the domain: src/backend/seed.ts).
// Its keys are of the profile's key types (docs/profiles.md): the workspace API's svc_ keys by default,
// a rest profile's consumer keys (an organization's, with the profile's prefix) under that profile.
import { z } from 'zod';
import type { Db, Queryable, Row } from '../db/types.js';
import { ConfigError, formatZodIssue, rowRefusal } from '../config/errors.js';
import { PLAN_NAME } from '../config/plans.js';
import { ROLES } from '../config/routes.js';
import { hashSecret, hintOf, keyTypeIn } from './secrets.js';
import { bindingOf, keyTypesOf, WORKSPACE_KEY_PROFILE, type KeyProfile, type KeyTypeRule } from './key-types.js';
import { getPepper } from './pepper.js';
import { recordAudit } from './service/audit.js';
import { METADATA_MAX_BYTES } from './service/keys.js';

const id = z.number().int().positive();
const role = z.enum(ROLES);
// Its prefix is checked against the profile's key types once the schema has passed (keyTypeOfSeed).
const secret = z.string();

// Per-customer limits (src/access/service/limits.ts): budgets per minute, and an organization's quota.
const perMinute = z.number().int().min(1).max(1_000_000_000).nullable().optional();
const keyLimits = z.object({ read: perMinute, write: perMinute, bulk: perMinute }).strict();
const orgLimits = keyLimits
  .extend({
    monthlyQuota: z
      .union([z.number().int().min(1).max(1e12), z.literal('none')])
      .nullable()
      .optional(),
  })
  .strict();

/** The UPDATE of a seeded row's limits (only when the seed gives them). */
function limitsUpdate(
  table: 'organizations' | 'api_keys',
  rowId: number,
  l: z.infer<typeof orgLimits>,
): [string, unknown[]] {
  const params: unknown[] = [rowId, l.read ?? null, l.write ?? null, l.bulk ?? null];
  let sql = `UPDATE ${table} SET limit_read=$2, limit_write=$3, limit_bulk=$4`;
  if (table === 'organizations') {
    params.push(typeof l.monthlyQuota === 'number' ? l.monthlyQuota : null, l.monthlyQuota === 'none');
    sql += ', monthly_quota=$5, monthly_quota_off=$6';
  }
  return [`${sql} WHERE id=$1`, params];
}

/** The access sections of the seed, each an array of rows (absent: none). */
export const accessSeedSections = {
  organizations: z
    .array(
      z
        .object({
          id,
          name: z.string().min(1),
          plan: z
            .string()
            .regex(PLAN_NAME, 'must be a plan name (a plan of PLANS_FILE; an unknown one gets the Free limits)')
            .nullable(),
          limits: orgLimits.optional(),
          apiAccess: z.boolean().default(true),
          paused: z.boolean().default(false),
          warmupCap: z.number().int().min(0).nullable().default(null),
          partnerCallback: z.object({ url: z.string().url(), verified: z.boolean() }).strict().optional(),
        })
        .strict(),
    )
    .default([]),
  users: z
    .array(
      z.object({ id, organizationId: id, email: z.string().email(), orgRole: z.enum(['OWNER', 'MEMBER']) }).strict(),
    )
    .default([]),
  workspaces: z
    .array(
      z
        .object({
          id,
          organizationId: id,
          name: z.string().min(1),
          dailyWarmupBudget: z.number().int().min(0).default(0),
          deleted: z.boolean().default(false),
        })
        .strict(),
    )
    .default([]),
  memberships: z.array(z.object({ workspaceId: id, userId: id, role }).strict()).default([]),
  apiKeys: z
    .array(
      z
        .object({
          id,
          secret,
          name: z.string().min(1),
          workspaceId: id.optional(),
          userId: id.optional(),
          organizationId: id.optional(),
          role: role.optional(),
          scopes: z.array(z.string().regex(/^[a-z]+:[a-z]+$/)).default([]),
          createdBy: id.optional(),
          revoked: z.boolean().default(false),
          limits: keyLimits.optional(),
          /** RFC 3339 with a zone; absent: never expires. */
          expiresAt: z.string().datetime({ offset: true }).optional(),
          /** Sent to the upstream in the signed identity; at most 1 KiB as JSON. */
          metadata: z
            .record(z.string(), z.unknown())
            .refine(
              (m) => Buffer.byteLength(JSON.stringify(m)) <= METADATA_MAX_BYTES,
              `must be at most ${METADATA_MAX_BYTES} bytes as JSON`,
            )
            .optional(),
        })
        .strict(),
    )
    .default([]),
  sessions: z.array(z.object({ token: z.string().min(16), userId: id }).strict()).default([]),
};

/** A positive integer id of a seeded row. */
export const seedId = id;

/** A section of the seed: rows of these fields (an unknown field is refused), none when absent. */
export function seedRows<T extends z.ZodRawShape>(fields: T) {
  return z.array(z.object(fields).strict()).default([]);
}

/** A statement of the seed: its failure names the section and row (`seed apiKeys.3: ...`), not the constraint. */
export type SeedStep = (section: string, i: number, sql: string, params: unknown[]) => Promise<unknown[]>;

/**
 * The statements of one seed row through `step`, as a Queryable: a backend domain writes its rows with
 * the functions of its queries.ts, and a refusal still names the section and row.
 */
export function seedRow(step: SeedStep, section: string, i: number): Queryable {
  return {
    query: <T extends Row>(sql: string, params: unknown[] = []) => step(section, i, sql, params) as Promise<T[]>,
  };
}

/** Sections of the seed file that a backend domain owns: their rows' schemas and how they are written. */
export interface SeedSections<S extends z.ZodRawShape = z.ZodRawShape> {
  /** Each section's schema by its name in the seed file (an array with its default). */
  shape: S;
  /**
   * Write the rows, inside the seed's transaction, after the access tables and the domains listed
   * before. `seed` is the whole seed: a domain may read another's rows that concern it.
   */
  apply(q: Queryable, seed: z.infer<z.ZodObject<S>> & Record<string, unknown>, step: SeedStep): Promise<void>;
  /** The tables whose ids the seed gives: their identities are moved past the largest id after it. */
  identityTables: string[];
}

/** A domain's SeedSections, its rows typed from its shape. */
export function seedSections<S extends z.ZodRawShape>(sections: SeedSections<S>): SeedSections {
  return sections as unknown as SeedSections;
}

type AccessSeed = z.infer<z.ZodObject<typeof accessSeedSections>>;

/** A parsed seed: the access sections, and the domains' by name. */
export type Seed = AccessSeed & Record<string, unknown>;

/** `a, b or c` */
const either = (items: string[]) =>
  items.length > 1 ? `${items.slice(0, -1).join(', ')} or ${items.at(-1)}` : items[0];

/** The key type of the profile a seeded secret is of, or the refusal naming the profile's prefixes. */
function keyTypeOfSeed(secret: string, profile: KeyProfile, at: string): KeyTypeRule {
  const types = keyTypesOf(profile);
  const name = keyTypeIn(secret, types);
  const rule = types.find((t) => t.name === name);
  if (rule) return rule;
  const prefixes = either(types.map((t) => t.prefix));
  throw new ConfigError(`${at}.secret: must be ${prefixes} plus 32 to 128 characters of [A-Za-z0-9]`);
}

/** What the schema cannot say of a key: a secret of one of the profile's key types, and the owner it needs. */
function checkKeys(seed: AccessSeed, source: string, profile: KeyProfile): void {
  seed.apiKeys.forEach((k, i) => {
    const at = `${source} apiKeys.${i}`;
    const rule = keyTypeOfSeed(k.secret, profile, at);
    const binding = bindingOf(rule);
    if (binding === 'workspace' && (k.workspaceId === undefined || k.userId !== undefined)) {
      throw new ConfigError(`${at}.workspaceId: a ${rule.prefix} key needs workspaceId and no userId`);
    }
    if (binding === 'user' && (k.userId === undefined || k.workspaceId !== undefined || k.role !== undefined)) {
      throw new ConfigError(`${at}.userId: a ${rule.prefix} key needs userId and no workspaceId or role`);
    }
    if (
      binding === 'organization' &&
      (k.organizationId === undefined || k.workspaceId !== undefined || k.userId !== undefined)
    ) {
      throw new ConfigError(
        `${at}.organizationId: a ${rule.prefix} key needs organizationId and no workspaceId or userId`,
      );
    }
  });
}

const ACCESS_TABLES_WITH_IDENTITY = ['organizations', 'users', 'workspaces', 'api_keys'];

export interface SeedLoader {
  /** The whole seed file's schema: the access sections and every domain's. */
  schema: z.ZodType;
  /**
   * Parse and check a seed; a ConfigError names the first bad field (`seed apiKeys.0.secret: ...`). Its
   * keys are of the profile's key types (absent: the workspace API's).
   */
  parse(raw: unknown, source?: string, profile?: KeyProfile): Seed;
  /** Apply a parsed seed in one transaction, under the profile it was parsed under. Returns the organization ids it touched. */
  apply(db: Db, seed: Seed, source?: string, profile?: KeyProfile): Promise<number[]>;
}

/** The loader of a seed file whose sections are the access ones and the domains' (in writing order). */
export function seedLoader(domains: readonly SeedSections[]): SeedLoader {
  const shape = Object.assign({}, accessSeedSections, ...domains.map((d) => d.shape)) as z.ZodRawShape;
  const schema = z.object(shape).strict();
  const identityTables = [...ACCESS_TABLES_WITH_IDENTITY, ...domains.flatMap((d) => d.identityTables)];
  return {
    schema,
    parse(raw, source = 'seed', profile = WORKSPACE_KEY_PROFILE) {
      const r = schema.safeParse(raw);
      if (!r.success) throw new ConfigError(formatZodIssue(source, r.error.issues[0], raw));
      const seed = r.data as Seed;
      checkKeys(seed, source, profile);
      return seed;
    },
    async apply(db, seed, source = 'seed', profile = WORKSPACE_KEY_PROFILE) {
      const pepper = await getPepper(db);
      return db.tx(async (q) => {
        const step: SeedStep = async (section, i, sql, params) => {
          try {
            return await q.query(sql, params);
          } catch (err) {
            throw new ConfigError(`${source} ${section}.${i}${rowRefusal(err)}`);
          }
        };
        await applyAccessSeed({ q, seed, step, pepper, source, profile });
        for (const d of domains) await d.apply(q, seed, step);
        await syncIdentities(q, identityTables);
        return recordSeed(q, seed, source);
      });
    },
  };
}

/** What the access sections are written with: the transaction, the seed, and the profile its keys are of. */
interface AccessWrite {
  q: Queryable;
  seed: AccessSeed;
  step: SeedStep;
  pepper: string;
  source: string;
  profile: KeyProfile;
}

async function applyAccessSeed(w: AccessWrite) {
  const { q, seed, step, source } = w;
  for (const [i, o] of seed.organizations.entries()) {
    await step(
      'organizations',
      i,
      `INSERT INTO organizations (id, name, plan, api_access, paused, warmup_cap, partner_callback_url, partner_callback_verified)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (id) DO UPDATE SET name=$2, plan=$3, api_access=$4, paused=$5, warmup_cap=$6,
        partner_callback_url=$7, partner_callback_verified=$8`,
      [
        o.id,
        o.name,
        o.plan,
        o.apiAccess,
        o.paused,
        o.warmupCap,
        o.partnerCallback?.url ?? null,
        o.partnerCallback?.verified ?? false,
      ],
    );
    if (o.limits) await step('organizations', i, ...limitsUpdate('organizations', o.id, o.limits));
  }
  for (const [i, u] of seed.users.entries()) {
    await step(
      'users',
      i,
      `INSERT INTO users (id, organization_id, email, org_role) VALUES ($1,$2,$3,$4)
        ON CONFLICT (id) DO UPDATE SET organization_id=$2, email=$3, org_role=$4`,
      [u.id, u.organizationId, u.email, u.orgRole],
    );
  }
  for (const [i, w] of seed.workspaces.entries()) {
    await step(
      'workspaces',
      i,
      `INSERT INTO workspaces (id, organization_id, name, daily_warmup_budget, deleted_at) VALUES ($1,$2,$3,$4, CASE WHEN $5::boolean THEN now() END)
        ON CONFLICT (id) DO UPDATE SET organization_id=$2, name=$3, daily_warmup_budget=$4,
        deleted_at = CASE WHEN $5::boolean THEN coalesce(workspaces.deleted_at, now()) END`,
      [w.id, w.organizationId, w.name, w.dailyWarmupBudget, w.deleted],
    );
  }
  for (const [i, m] of seed.memberships.entries()) {
    await step(
      'memberships',
      i,
      `INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1,$2,$3)
        ON CONFLICT (workspace_id, user_id) DO UPDATE SET role=$3`,
      [m.workspaceId, m.userId, m.role],
    );
    const same = await q.query(
      `SELECT 1 FROM workspaces w JOIN users u ON u.organization_id = w.organization_id WHERE w.id=$1 AND u.id=$2`,
      [m.workspaceId, m.userId],
    );
    if (!same.length)
      throw new ConfigError(
        `${source} memberships.${i}: user ${m.userId} is not in workspace ${m.workspaceId}'s organization`,
      );
  }
  await writeKeys(w);
}

/** The keys (only a keyed hash of each secret is stored) and the sessions of the seed. */
async function writeKeys({ q, seed, step, pepper, source, profile }: AccessWrite) {
  for (const [i, k] of seed.apiKeys.entries()) {
    const at = `${source} apiKeys.${i}`;
    const rule = keyTypeOfSeed(k.secret, profile, at);
    const { org, keyRole } = await keyOwner(q, k, bindingOf(rule), at);
    await step(
      'apiKeys',
      i,
      `INSERT INTO api_keys (id, organization_id, type, key_hash, hint, name, workspace_id, user_id, role, scopes, created_by, revoked_at,
          expires_at, metadata)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11, CASE WHEN $12::boolean THEN now() END, $13, $14::jsonb)
        ON CONFLICT (id) DO UPDATE SET organization_id=$2, type=$3, key_hash=$4, hint=$5, name=$6, workspace_id=$7, user_id=$8, role=$9,
        scopes=$10, created_by=$11, revoked_at = CASE WHEN $12::boolean THEN coalesce(api_keys.revoked_at, now()) END,
        expires_at=$13, metadata=$14::jsonb,
        previous_key_hash = CASE WHEN api_keys.key_hash = $4 THEN api_keys.previous_key_hash END,
        previous_hint = CASE WHEN api_keys.key_hash = $4 THEN api_keys.previous_hint END,
        previous_expires_at = CASE WHEN api_keys.key_hash = $4 THEN api_keys.previous_expires_at END`,
      [
        k.id,
        org,
        rule.name,
        hashSecret(pepper, k.secret),
        hintOf(k.secret, rule.prefix),
        k.name,
        k.workspaceId ?? null,
        k.userId ?? null,
        keyRole,
        k.scopes,
        k.createdBy ?? null,
        k.revoked,
        k.expiresAt ?? null,
        k.metadata ? JSON.stringify(k.metadata) : null,
      ],
    );
    if (k.limits) await step('apiKeys', i, ...limitsUpdate('api_keys', k.id, k.limits));
  }
  for (const [i, s] of seed.sessions.entries()) {
    await step(
      'sessions',
      i,
      `INSERT INTO sessions (token_hash, user_id) VALUES ($1,$2) ON CONFLICT (token_hash) DO UPDATE SET user_id=$2`,
      [hashSecret(pepper, s.token), s.userId],
    );
  }
}

/** The organization a seeded key belongs to, and a workspace key's role (capped by its creator's). */
async function keyOwner(
  q: Queryable,
  k: AccessSeed['apiKeys'][number],
  binding: ReturnType<typeof bindingOf>,
  at: string,
): Promise<{ org: number; keyRole: string | null }> {
  let org: number;
  let keyRole: string | null = null;
  if (binding === 'workspace') {
    const ws = await q.query(`SELECT organization_id FROM workspaces WHERE id=$1`, [k.workspaceId]);
    if (!ws.length) throw new ConfigError(`${at}.workspaceId: no workspace ${k.workspaceId}`);
    org = ws[0].organization_id;
    keyRole = k.role ?? 'ADMIN';
    if (k.createdBy !== undefined) {
      // A workspace key's role is capped by its creator's role in that workspace at creation.
      const m = await q.query(`SELECT role FROM memberships WHERE workspace_id=$1 AND user_id=$2`, [
        k.workspaceId,
        k.createdBy,
      ]);
      if (!m.length)
        throw new ConfigError(`${at}.createdBy: user ${k.createdBy} is not a member of workspace ${k.workspaceId}`);
      if (ROLES.indexOf(m[0].role) < ROLES.indexOf(keyRole as (typeof ROLES)[number])) keyRole = m[0].role;
    }
  } else if (binding === 'user') {
    const u = await q.query(`SELECT organization_id FROM users WHERE id=$1`, [k.userId]);
    if (!u.length) throw new ConfigError(`${at}.userId: no user ${k.userId}`);
    org = u[0].organization_id;
  } else {
    const o = await q.query(`SELECT id FROM organizations WHERE id=$1`, [k.organizationId]);
    if (!o.length) throw new ConfigError(`${at}.organizationId: no organization ${k.organizationId}`);
    org = k.organizationId!;
  }
  return { org, keyRole };
}

/** One audit row per application (never a secret: key ids only); the actor is the seed. */
async function recordSeed(q: Queryable, seed: AccessSeed, source: string): Promise<number[]> {
  const orgs = new Set<number>(seed.organizations.map((o) => o.id));
  await recordAudit(
    q,
    { actor: { kind: 'seed' } },
    {
      action: 'seed.apply',
      targetType: 'seed',
      targetIds: [...orgs],
      organizationId: orgs.size === 1 ? [...orgs][0] : null,
      after: {
        source,
        organizations: seed.organizations.map((o) => o.id),
        users: seed.users.map((u) => u.id),
        workspaces: seed.workspaces.map((w) => w.id),
        apiKeys: seed.apiKeys.map((k) => k.id),
        sessions: seed.sessions.length,
      },
    },
  );
  return [...orgs];
}

/** After explicit ids, move each identity past the largest id so later inserts never collide. */
export async function syncIdentities(q: Queryable, tables: readonly string[]): Promise<void> {
  for (const t of tables) {
    await q.query(
      `SELECT setval(pg_get_serial_sequence('${t}', 'id'), GREATEST((SELECT max(id) FROM ${t}), 0) + 1, false)`,
    );
  }
}
