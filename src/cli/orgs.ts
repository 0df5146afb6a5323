// `keygate orgs pause|resume|plan`: what the billing system does through PATCH
// /internal/organizations/{id} (CONTRACT section 7), with the same effects: a plan change lowers every
// mailbox above the new plan's cap, and every change bumps the organization's access version so the
// gateways apply it to the very next request.
import { planOf, type Plans } from '../config/plans.js';
import { applyPlanCap } from '../backend/warmup/limits.js';
import { idArg, oneOf, parseArgs, UsageError } from './args.js';
import { withContext, type AdminContext } from './context.js';
import { CommandError, output } from './output.js';

type Change = { paused: boolean } | { plan: string | null };

function orgView(o: Record<string, any>) {
  return { id: o.id, name: o.name, plan: o.plan, apiAccess: o.api_access, paused: o.paused, warmupCap: o.warmup_cap };
}

export async function changeOrganization(ctx: AdminContext, command: string, id: number, change: Change) {
  const result = await ctx.db.tx(async (q) => {
    const cur = await q.query(`SELECT * FROM organizations WHERE id = $1 FOR UPDATE`, [id]);
    if (!cur.length) throw new CommandError(`${command}: no organization ${id}`);
    if ('paused' in change) {
      const rows = await q.query(`UPDATE organizations SET paused = $2 WHERE id = $1 RETURNING *`, [id, change.paused]);
      return { org: rows[0], lowered: 0 };
    }
    const rows = await q.query(`UPDATE organizations SET plan = $2 WHERE id = $1 RETURNING *`, [id, change.plan]);
    // A plan change lowers every mailbox above the new plan's cap at once (spec, States).
    const lowered = change.plan !== cur[0].plan ? await applyPlanCap(q, id, planOf(ctx.plans(), change.plan).plan.maxWarmupPerAccount) : 0;
    return { org: rows[0], lowered };
  });
  await ctx.accessChanged(id);
  return { ...orgView(result.org), mailboxesLowered: result.lowered };
}

export async function orgsCommand(ctx: () => Promise<AdminContext>, sub: string | undefined, argv: readonly string[], plans: () => Plans): Promise<void> {
  if (sub === 'pause' || sub === 'resume') {
    const command = `orgs ${sub}`;
    const a = parseArgs(command, argv, { positionals: ['orgId'] });
    const id = idArg(command, '<orgId>', a.positionals.orgId);
    const org = await withContext(ctx, (c) => changeOrganization(c, command, id, { paused: sub === 'pause' }));
    output(a.flags.has('json'), org, [`Organization ${org.id} "${org.name}" is ${org.paused ? 'paused: every /v2 and /v1 call is refused' : 'active'}.`]);
    return;
  }
  if (sub === 'plan') {
    const a = parseArgs('orgs plan', argv, { positionals: ['orgId', 'plan'] });
    const id = idArg('orgs plan', '<orgId>', a.positionals.orgId);
    // Plans are data: any plan of PLANS_FILE.
    const raw = oneOf('orgs plan', '<plan>', a.positionals.plan, [...Object.keys(plans()), 'none']);
    const plan = raw === 'none' ? null : raw;
    const org = await withContext(ctx, (c) => changeOrganization(c, 'orgs plan', id, { plan }));
    output(a.flags.has('json'), org, [
      `Organization ${org.id} "${org.name}" is on plan ${org.plan ?? 'none (Free limits)'}${org.mailboxesLowered ? `; ${org.mailboxesLowered} mailboxes lowered to its cap` : ''}.`,
    ]);
    return;
  }
  throw new UsageError(`orgs: expected pause, resume, plan or limits${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
}
