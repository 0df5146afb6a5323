// `keygate orgs limits`, `keygate keys limits` and `keygate limits replay`: per-customer limits and
// the what-if of a plan change (docs/limits.md). The changes go through src/access/service/limits.ts,
// as the backend's internal route does.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { ConfigError, formatZodIssue } from '../config/errors.js';
import { readJson } from '../config/plans.js';
import { limitOverridesOf, type LimitOverrides } from '../config/budgets.js';
import {
  candidatePlans,
  parseAccessLine,
  replay,
  type AccessLine,
  type ReplayLimits,
  type ReplayReport,
} from './replay.js';
import {
  getKeyLimits,
  getOrganizationLimits,
  setKeyLimits,
  setOrganizationLimits,
  type LimitsChange,
  type LimitsView,
} from '../access/service/limits.js';
import { viaService } from './service.js';
import { commandArgs, idArg, UsageError, type ParsedArgs } from './args.js';
import { COMMAND_SPECS } from './specs.js';
import { withContext, type AdminContext } from './context.js';
import { output, table } from './output.js';
import type { Bucket } from '../config/routes.js';
import { BUCKETS } from '../limits/counters.js';

/** `--read N|plan` ...: N sets, `plan` clears back to the layer above; `--clear` clears every one. */
export function limitsChange(command: string, a: ParsedArgs, forKey: boolean): LimitsChange | null {
  const change: LimitsChange = {};
  const number = (name: string, raw: string) => {
    if (!/^[1-9][0-9]{0,12}$/.test(raw))
      throw new UsageError(`${command}: --${name} must be a positive integer or "plan" (got ${JSON.stringify(raw)})`);
    return Number(raw);
  };
  for (const b of BUCKETS) {
    const raw = a.values[b];
    if (raw !== undefined) change[b] = raw === 'plan' ? null : number(b, raw);
  }
  const q = a.values['monthly-quota'];
  if (q !== undefined) {
    if (forKey) throw new UsageError(`${command}: --monthly-quota is set per organization (keygate orgs limits)`);
    change.monthlyQuota = q === 'plan' ? null : q === 'none' ? 'none' : number('monthly-quota', q);
  }
  if (a.flags.has('clear')) {
    if (Object.keys(change).length > 0) throw new UsageError(`${command}: --clear takes no other limit`);
    return forKey
      ? { read: null, write: null, bulk: null }
      : { read: null, write: null, bulk: null, monthlyQuota: null };
  }
  return Object.keys(change).length > 0 ? change : null;
}

function describe(v: LimitsView): string[] {
  const what =
    v.keyId === undefined ? `Organization ${v.organizationId}` : `Key ${v.keyId} (organization ${v.organizationId})`;
  const own = (b: Bucket) => (v.overrides[b] === null ? 'plan' : 'override');
  const quota = v.effective.monthlyQuota === null ? 'none' : `${v.effective.monthlyQuota} requests per month (UTC)`;
  return [
    `${what}, plan ${v.plan}:`,
    ...BUCKETS.map((b) => `  ${b.padEnd(5)} ${String(v.effective[b]).padStart(6)} per minute (${own(b)})`),
    `  monthly quota: ${quota}${v.keyId === undefined && v.overrides.monthlyQuota !== null ? ' (override)' : ''}`,
  ];
}

/** `orgs limits <orgId> [...]` and `keys limits <keyId> [...]`: without a change, shows them. */
export async function limitsCommand(
  ctx: () => Promise<AdminContext>,
  of: 'orgs' | 'keys',
  argv: readonly string[],
): Promise<void> {
  const command = `${of} limits` as const;
  const what = of === 'orgs' ? '<orgId>' : '<keyId>';
  const a = commandArgs(COMMAND_SPECS[command], argv);
  const id = idArg(command, what, a.positionals[what.slice(1, -1)]);
  const change = limitsChange(command, a, of === 'keys');
  const view = await withContext(ctx, (c) =>
    viaService(command, () => {
      if (of === 'orgs')
        return change ? setOrganizationLimits(c.service, id, change) : getOrganizationLimits(c.service, id);
      return change ? setKeyLimits(c.service, id, change) : getKeyLimits(c.service, id);
    }),
  );
  output(a.flags.has('json'), view, describe(view));
}

// --overrides FILE: candidate plans and overrides per organization, and overrides per key; they
// replace the database's for what they name (null: back to the layer above).
const budget = z.number().int().min(1).max(1_000_000_000).nullable().optional();
const overridesSchema = z
  .object({
    organizations: z
      .record(
        z.string().regex(/^[1-9][0-9]*$/, 'an organization id'),
        z
          .object({
            plan: z.string().nullable().optional(),
            read: budget,
            write: budget,
            bulk: budget,
            monthlyQuota: z
              .union([z.number().int().min(1), z.literal('none')])
              .nullable()
              .optional(),
          })
          .strict(),
      )
      .default({}),
    keys: z
      .record(
        z.string().regex(/^[1-9][0-9]*$/, 'a key id'),
        z.object({ read: budget, write: budget, bulk: budget }).strict(),
      )
      .default({}),
  })
  .strict();

/** Every organization's plan and overrides, and every key's overrides, from the database. */
async function currentLimits(c: AdminContext): Promise<Omit<ReplayLimits, 'plans'>> {
  const orgs = await c.db.query(
    `SELECT id, plan, limit_read AS o_read, limit_write AS o_write, limit_bulk AS o_bulk, monthly_quota, monthly_quota_off FROM organizations`,
  );
  const keys = await c.db.query(
    `SELECT id, limit_read, limit_write, limit_bulk FROM api_keys WHERE limit_read IS NOT NULL OR limit_write IS NOT NULL OR limit_bulk IS NOT NULL`,
  );
  return {
    organizations: new Map(
      orgs.map((o) => [o.id as number, { plan: o.plan as string | null, limits: limitOverridesOf(o) }]),
    ),
    keys: new Map(
      keys.map((k) => [
        k.id as number,
        Object.fromEntries(BUCKETS.filter((b) => k[`limit_${b}`] != null).map((b) => [b, Number(k[`limit_${b}`])])),
      ]),
    ),
  };
}

function applyOverrides(
  base: Omit<ReplayLimits, 'plans'>,
  file: z.infer<typeof overridesSchema>,
): Omit<ReplayLimits, 'plans'> {
  const organizations = new Map(base.organizations);
  for (const [id, o] of Object.entries(file.organizations)) {
    const cur = organizations.get(Number(id)) ?? {
      plan: null,
      limits: { read: null, write: null, bulk: null, monthlyQuota: null },
    };
    const limits: LimitOverrides = { ...cur.limits };
    for (const b of BUCKETS) if (o[b] !== undefined) limits[b] = o[b];
    if (o.monthlyQuota !== undefined) limits.monthlyQuota = o.monthlyQuota === 'none' ? 'off' : o.monthlyQuota;
    organizations.set(Number(id), { plan: o.plan !== undefined ? o.plan : cur.plan, limits });
  }
  const keys = new Map(base.keys);
  for (const [id, k] of Object.entries(file.keys)) {
    const cur = { ...keys.get(Number(id)) };
    for (const b of BUCKETS) {
      if (k[b] === null) delete cur[b];
      else if (k[b] !== undefined) cur[b] = k[b];
    }
    keys.set(Number(id), cur);
  }
  return { organizations, keys };
}

async function readLog(file: string): Promise<{ lines: AccessLine[]; skipped: number }> {
  const lines: AccessLine[] = [];
  let skipped = 0;
  try {
    const rl = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
    for await (const text of rl) {
      if (text.trim() === '') continue;
      const line = parseAccessLine(text);
      if (line && line.organizationId !== null && line.keyId !== null) lines.push(line);
      else skipped++;
    }
  } catch (err) {
    throw new ConfigError(
      `limits replay: --access-log ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  return { lines, skipped };
}

function reportLines(r: ReplayReport): string[] {
  if (r.rows.length === 0) return [`No keyed request in the log (${r.lines + r.skipped} lines, ${r.skipped} skipped).`];
  const when = (row: ReplayReport['rows'][number]) =>
    row.firstRefusal ? `${row.firstRefusal} .. ${row.lastRefusal}` : '';
  return [
    `Replayed ${r.lines} keyed requests from ${r.from} to ${r.to} (${r.skipped} other lines skipped).`,
    ...table(
      [
        'org',
        'key',
        'plan',
        'requests',
        'refused now',
        'would refuse/min',
        'would refuse/month',
        'admitted now',
        'when',
      ],
      r.rows.map((row) => [
        row.organizationId,
        row.keyId ?? '(all)',
        row.plan,
        row.requests,
        row.refusedReal,
        row.refusedPerMinute,
        row.refusedMonthly,
        row.admittedNow,
        when(row),
      ]),
    ),
  ];
}

/** `limits replay --access-log FILE --plans NEW.json [--overrides FILE]`. */
export async function replayCommand(ctx: () => Promise<AdminContext>, argv: readonly string[]): Promise<void> {
  const command = 'limits replay';
  const a = commandArgs(COMMAND_SPECS[command], argv);
  const logFile = a.values['access-log'];
  const plansFile = a.values.plans;
  if (logFile === undefined) throw new UsageError(`${command}: --access-log is required`);
  if (plansFile === undefined)
    throw new UsageError(
      `${command}: --plans is required (the candidate plans, in the format of the profile's plans: config/plans.json for the workspace API)`,
    );
  // Read now, checked against the profile in force once the context has it (a rest profile's plans differ).
  const rawPlans = readJson(plansFile);
  let overrides: z.infer<typeof overridesSchema> | null = null;
  if (a.values.overrides !== undefined) {
    const raw = readJson(a.values.overrides);
    const r = overridesSchema.safeParse(raw);
    if (!r.success) throw new ConfigError(formatZodIssue(a.values.overrides, r.error.issues[0], raw));
    overrides = r.data;
  }
  const { lines, skipped } = await readLog(logFile);
  const report = await withContext(ctx, async (c) => {
    const plans = candidatePlans(rawPlans, plansFile, c.profile);
    const base = await currentLimits(c);
    const limits = { plans, ...(overrides ? applyOverrides(base, overrides) : base) };
    return replay(lines, limits, c.routes(), skipped, c.profile.interfaces);
  });
  output(a.flags.has('json'), report, reportLines(report));
}
