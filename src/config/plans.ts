// config/plans.json: the per-minute budgets of the spec's plan table, per-plan caps and the optional
// monthly request quota. Plans are data: a plan added to the file is usable at once (the database
// stores a plan's name without a fixed list; an unknown name gets the Free plan's limits).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError, formatZodIssue, reasonOf } from './errors.js';

/** The spec's plans: every plans file must define them (the contract names them), and may add more. */
export const PLAN_IDS = ['free', 'trial', 'starter', 'growth', 'scale', 'scale_5k', 'scale_10k', 'scale_20k'] as const;
export type PlanId = string;
/** A plan's name: what the database, the seed and the CLI accept. */
export const PLAN_NAME = /^[a-z][a-z0-9_]{0,39}$/;

const budget = z.number().int().positive();
export const planSchema = z
  .object({
    label: z.string().min(1),
    read: budget,
    write: budget,
    bulk: budget,
    /** The per-mailbox cap on warmupMaxLimit; null is no cap. */
    maxWarmupPerAccount: z.number().int().min(5).nullable(),
    /** How many mailboxes may warm at once; null is no cap. */
    warmingMailboxCap: z.number().int().min(0).nullable(),
    entitlements: z.array(z.enum(['warmup_language', 'content_settings'])),
    /** Rate limits of this plan in `shadow` or `enforce`, over RATE_LIMIT_MODE (src/gateway/shadow.ts). */
    limitMode: z.enum(['enforce', 'shadow']).optional(),
    /** Requests per calendar month (UTC) per organization; absent is no quota. */
    monthlyQuota: z.number().int().positive().max(1e12).optional(),
  })
  .strict();
export type Plan = z.infer<typeof planSchema>;

export const planName = z
  .string()
  .regex(PLAN_NAME, 'a plan name is 1 to 40 characters of [a-z0-9_], starting with a letter');

export const plansSchema = z.record(planName, planSchema).superRefine((plans, ctx) => {
  for (const id of PLAN_IDS)
    if (!(id in plans)) ctx.addIssue({ code: 'custom', path: [id], message: `the plan "${id}" is required` });
});
export type Plans = Record<string, Plan>;

export function parsePlans(raw: unknown, source = 'plans'): Plans {
  const r = plansSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(formatZodIssue(source, r.error.issues[0], raw));
  return r.data as Plans;
}

export function loadPlans(file: string): Plans {
  return parsePlans(readJson(file, 'PLANS_FILE'), file);
}

/** A null or unknown plan is treated as Free for rate limits (spec, Limits rule 1). */
export function planOf(plans: Plans, plan: string | null): { id: PlanId; plan: Plan } {
  const id = plan !== null && Object.hasOwn(plans, plan) ? plan : 'free';
  return { id, plan: plans[id] };
}

/** A JSON data file; `setting` names the setting that points at it, for the error line. */
export function readJson(file: string, setting?: string): unknown {
  const at = setting ? `setting ${setting}: ${file}` : file;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${at}: cannot read (${reasonOf(err) ?? 'unreadable'})`);
  }
  return parseJsonText(text, at);
}

/** JSON text, or a ConfigError `<at>: invalid JSON at line L, column C`. */
export function parseJsonText(text: string, at: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    // Only the place: V8's message quotes the text around it, and a seed file holds secrets.
    const pos = /at position (\d+)/.exec((err as Error).message);
    const before = pos ? text.slice(0, Number(pos[1])).split('\n') : null;
    throw new ConfigError(
      `${at}: invalid JSON${before ? ` at line ${before.length}, column ${before[before.length - 1].length + 1}` : ''}`,
    );
  }
}
