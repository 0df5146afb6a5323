// config/plans.json: the per-minute budgets of the spec's plan table and per-plan caps.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError, formatZodIssue } from './errors.js';

export const PLAN_IDS = ['free', 'trial', 'starter', 'growth', 'scale', 'scale_5k', 'scale_10k', 'scale_20k'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

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
  })
  .strict();
export type Plan = z.infer<typeof planSchema>;

export const plansSchema = z
  .object(Object.fromEntries(PLAN_IDS.map((id) => [id, planSchema])) as Record<PlanId, typeof planSchema>)
  .strict();
export type Plans = Record<PlanId, Plan>;

export function parsePlans(raw: unknown, source = 'plans'): Plans {
  const r = plansSchema.safeParse(raw);
  if (!r.success) throw new ConfigError(formatZodIssue(source, r.error.issues[0]));
  return r.data as Plans;
}

export function loadPlans(file: string): Plans {
  return parsePlans(readJson(file), file);
}

/** A null or unknown plan is treated as Free for rate limits (spec, Limits rule 1). */
export function planOf(plans: Plans, plan: string | null): { id: PlanId; plan: Plan } {
  const id = (plan && (PLAN_IDS as readonly string[]).includes(plan) ? plan : 'free') as PlanId;
  return { id, plan: plans[id] };
}

export function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file}: invalid JSON (${(err as Error).message})`);
  }
}
