// The seed loader of CONTRACT section 2: strict (an unknown field is an error that names it), applied
// in one transaction (a bad seed changes nothing), idempotent by id.
import { z } from 'zod';
import type { Db, Queryable } from '../db/types.js';
import { ConfigError, formatZodIssue, rowRefusal } from '../config/errors.js';
import { PLAN_NAME } from '../config/plans.js';
import { ROLES } from '../config/routes.js';
import { hashSecret, hintOf, keyTypeOf } from './secrets.js';
import { getPepper } from './pepper.js';
import { recordAudit } from './service/audit.js';
import { METADATA_MAX_BYTES } from './service/keys.js';
import { systemClock } from '../limits/types.js';

const id = z.number().int().positive();
const role = z.enum(ROLES);
const secret = z
  .string()
  .regex(
    /^(svc_ws_|svc_pk_|svc_v1_)[A-Za-z0-9]{32,128}$/,
    'must be svc_ws_, svc_pk_ or svc_v1_ plus 32 to 128 characters of [A-Za-z0-9]',
  );

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

export const seedSchema = z
  .object({
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
    accounts: z
      .array(
        z
          .object({
            id,
            workspaceId: id,
            emailAddress: z.string().email(),
            fromName: z.string().default(''),
            provider: z.string().regex(/^[a-z0-9-]+$/),
            status: z.enum(['active', 'warming', 'paused', 'error', 'auth-expired', 'disconnected']),
            verification: z.enum(['pending', 'passed', 'failed']),
            warmupMaxLimit: z.number().int().min(5),
            warmupCurrentLimit: z.number().int().min(5).optional(),
            replyRateCustom: z.number().min(0).max(100).nullable().default(null),
            timeZone: z.string().min(1).default('UTC'),
            tagIds: z.array(id).default([]),
          })
          .strict(),
      )
      .default([]),
    tags: z.array(z.object({ id, workspaceId: id, name: z.string().min(1).max(64) }).strict()).default([]),
    notifications: z
      .array(
        z
          .object({
            id,
            workspaceId: id,
            type: z.string().min(1),
            severity: z.string().min(1),
            category: z.string().min(1),
            title: z.string().min(1),
            body: z.string(),
            emailAccountId: id.optional(),
            read: z.boolean().default(false),
            minutesAgo: z.number().int().min(0).default(0),
          })
          .strict(),
      )
      .default([]),
    providerWorkspaces: z
      .array(
        z
          .object({
            id,
            organizationId: id,
            workspaceId: id.optional(),
            provider: z.enum(['google', 'microsoft']),
            adminEmail: z.string().email().optional(),
            tenantId: z.string().min(1).optional(),
            status: z.string().default('active'),
          })
          .strict(),
      )
      .default([]),
    /** Deterministic warmup history: `perDay` messages a day for `days` days up to today. */
    warmupActivity: z
      .array(
        z
          .object({
            accountId: id,
            days: z.number().int().min(1).max(90),
            perDay: z.number().int().min(1).max(200),
            spamPercent: z.number().int().min(0).max(100).default(5),
            bouncePercent: z.number().int().min(0).max(100).default(2),
            replyPercent: z.number().int().min(0).max(100).default(30),
          })
          .strict(),
      )
      .default([]),
  })
  .strict();

export type Seed = z.infer<typeof seedSchema>;

export function parseSeed(raw: unknown, source = 'seed'): Seed {
  const r = seedSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(formatZodIssue(source, r.error.issues[0], raw));
  const seed = r.data;
  seed.apiKeys.forEach((k, i) => {
    const type = keyTypeOf(k.secret)!;
    const at = `${source} apiKeys.${i}`;
    if (type === 'workspace' && (k.workspaceId === undefined || k.userId !== undefined)) {
      throw new ConfigError(`${at}.workspaceId: a svc_ws_ key needs workspaceId and no userId`);
    }
    if (type === 'personal' && (k.userId === undefined || k.workspaceId !== undefined || k.role !== undefined)) {
      throw new ConfigError(`${at}.userId: a svc_pk_ key needs userId and no workspaceId or role`);
    }
    if (
      type === 'partner' &&
      (k.organizationId === undefined || k.workspaceId !== undefined || k.userId !== undefined)
    ) {
      throw new ConfigError(`${at}.organizationId: a svc_v1_ key needs organizationId and no workspaceId or userId`);
    }
  });
  return seed;
}

const TABLES_WITH_IDENTITY = [
  'organizations',
  'users',
  'workspaces',
  'api_keys',
  'accounts',
  'tags',
  'notifications',
  'provider_workspaces',
];

/** Apply a seed in one transaction. Returns the organization ids it touched. */
export async function applySeed(db: Db, seed: Seed, source = 'seed'): Promise<number[]> {
  const pepper = await getPepper(db);
  return db.tx(async (q) => {
    const step = async (section: string, i: number, sql: string, params: unknown[]) => {
      try {
        return await q.query(sql, params);
      } catch (err) {
        throw new ConfigError(`${source} ${section}.${i}${rowRefusal(err)}`);
      }
    };
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
    for (const [i, k] of seed.apiKeys.entries()) {
      const type = keyTypeOf(k.secret)!;
      const at = `apiKeys.${i}`;
      let org: number;
      let keyRole: string | null = null;
      if (type === 'workspace') {
        const ws = await q.query(`SELECT organization_id FROM workspaces WHERE id=$1`, [k.workspaceId]);
        if (!ws.length) throw new ConfigError(`${source} ${at}.workspaceId: no workspace ${k.workspaceId}`);
        org = ws[0].organization_id;
        keyRole = k.role ?? 'ADMIN';
        if (k.createdBy !== undefined) {
          // A workspace key's role is capped by its creator's role in that workspace at creation.
          const m = await q.query(`SELECT role FROM memberships WHERE workspace_id=$1 AND user_id=$2`, [
            k.workspaceId,
            k.createdBy,
          ]);
          if (!m.length)
            throw new ConfigError(
              `${source} ${at}.createdBy: user ${k.createdBy} is not a member of workspace ${k.workspaceId}`,
            );
          if (ROLES.indexOf(m[0].role) < ROLES.indexOf(keyRole as (typeof ROLES)[number])) keyRole = m[0].role;
        }
      } else if (type === 'personal') {
        const u = await q.query(`SELECT organization_id FROM users WHERE id=$1`, [k.userId]);
        if (!u.length) throw new ConfigError(`${source} ${at}.userId: no user ${k.userId}`);
        org = u[0].organization_id;
      } else {
        const o = await q.query(`SELECT id FROM organizations WHERE id=$1`, [k.organizationId]);
        if (!o.length) throw new ConfigError(`${source} ${at}.organizationId: no organization ${k.organizationId}`);
        org = k.organizationId!;
      }
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
          type,
          hashSecret(pepper, k.secret),
          hintOf(k.secret),
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
    for (const [i, t] of seed.tags.entries()) {
      await step(
        'tags',
        i,
        `INSERT INTO tags (id, workspace_id, name) VALUES ($1,$2,$3) ON CONFLICT (id) DO UPDATE SET workspace_id=$2, name=$3`,
        [t.id, t.workspaceId, t.name],
      );
    }
    for (const [i, p] of seed.providerWorkspaces.entries()) {
      await step(
        'providerWorkspaces',
        i,
        `INSERT INTO provider_workspaces (id, organization_id, workspace_id, provider, admin_email, tenant_id, status, last_synced_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7, now()) ON CONFLICT (id) DO UPDATE SET organization_id=$2, workspace_id=$3, provider=$4, admin_email=$5, tenant_id=$6, status=$7`,
        [p.id, p.organizationId, p.workspaceId ?? null, p.provider, p.adminEmail ?? null, p.tenantId ?? null, p.status],
      );
    }
    for (const [i, a] of seed.accounts.entries()) {
      await step(
        'accounts',
        i,
        `INSERT INTO accounts (id, workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit,
          warmup_current_limit, reply_rate_custom, time_zone, last_connected_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11, now())
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, email_address=$3, from_name=$4, provider=$5, status=$6, verification=$7,
          warmup_max_limit=$8, warmup_current_limit=$9, reply_rate_custom=$10, time_zone=$11, updated_at=now()`,
        [
          a.id,
          a.workspaceId,
          a.emailAddress,
          a.fromName,
          a.provider,
          a.status,
          a.verification,
          a.warmupMaxLimit,
          Math.min(a.warmupCurrentLimit ?? Math.min(20, a.warmupMaxLimit), a.warmupMaxLimit),
          a.replyRateCustom,
          a.timeZone,
        ],
      );
      await q.query(`DELETE FROM account_tags WHERE account_id=$1`, [a.id]);
      for (const tagId of a.tagIds) {
        await step(
          'accounts',
          i,
          `INSERT INTO account_tags (account_id, tag_id) SELECT $1, t.id FROM tags t WHERE t.id=$2 AND t.workspace_id=$3`,
          [a.id, tagId, a.workspaceId],
        );
      }
    }
    for (const [i, n] of seed.notifications.entries()) {
      await step(
        'notifications',
        i,
        `INSERT INTO notifications (id, workspace_id, type, severity, category, title, body, email_account_id, read_at, created_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8, CASE WHEN $9::boolean THEN now() END, now() - make_interval(mins => $10::int))
        ON CONFLICT (id) DO UPDATE SET workspace_id=$2, type=$3, severity=$4, category=$5, title=$6, body=$7, email_account_id=$8,
          read_at = CASE WHEN $9::boolean THEN coalesce(notifications.read_at, now()) END`,
        [
          n.id,
          n.workspaceId,
          n.type,
          n.severity,
          n.category,
          n.title,
          n.body,
          n.emailAccountId ?? null,
          n.read,
          n.minutesAgo,
        ],
      );
    }
    for (const [i, w] of seed.warmupActivity.entries()) {
      await q.query(`DELETE FROM warmup_messages WHERE account_id=$1`, [w.accountId]);
      // Deterministic: the same seed gives the same history relative to today.
      await step(
        'warmupActivity',
        i,
        `INSERT INTO warmup_messages (account_id, sent_at, recipient_esp, outcome, replied)
        SELECT $1::int, date_trunc('day', now()) - make_interval(days => d) + make_interval(mins => 30 + n * 7),
          (ARRAY['google','microsoft','other','yahoo'])[1 + ((d * 7 + n * 3 + $1::int) % 4)],
          CASE WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int THEN 'spam'
               WHEN ((d * 13 + n * 7 + $1::int) % 100) < $4::int + $5::int THEN 'bounced' ELSE 'inbox' END,
          ((d * 11 + n * 5 + $1::int) % 100) < $6::int
        FROM generate_series(0, $2::int - 1) AS d, generate_series(0, $3::int - 1) AS n`,
        [w.accountId, w.days, w.perDay, w.spamPercent, w.bouncePercent, w.replyPercent],
      );
    }
    await syncIdentities(q);
    const orgs = new Set<number>(seed.organizations.map((o) => o.id));
    // One audit row per application (never a secret: key ids only); the actor is the seed.
    await recordAudit(
      q,
      { actor: { kind: 'seed' }, clock: systemClock },
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
  });
}

/** After explicit ids, move each identity past the largest id so later inserts never collide. */
export async function syncIdentities(q: Queryable, tables = TABLES_WITH_IDENTITY): Promise<void> {
  for (const t of tables) {
    await q.query(
      `SELECT setval(pg_get_serial_sequence('${t}', 'id'), GREATEST((SELECT max(id) FROM ${t}), 0) + 1, false)`,
    );
  }
}
