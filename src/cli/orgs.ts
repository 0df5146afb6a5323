// `keygate orgs pause|resume|plan`: what the billing system does through PATCH
// /internal/organizations/{id} (docs/decisions.md section 7), through the same service operation: a plan change
// lowers every mailbox above the new plan's cap, every change is audited and bumps the organization's
// access version so the gateways apply it to the very next request.
import type { Plans } from '../config/plans.js';
import { updateOrganization, type OrganizationPatch } from '../access/service/organizations.js';
import { commandArgs, idArg, oneOf, UsageError } from './args.js';
import { COMMAND_SPECS } from './specs.js';
import { withContext, type AdminContext } from './context.js';
import { output } from './output.js';
import { viaService } from './service.js';

/** Through the service layer (src/access/service/organizations.ts): validated, audited, version bumped. */
export async function changeOrganization(ctx: AdminContext, command: string, id: number, change: OrganizationPatch) {
  const { partnerCallback: _callback, ...org } = await viaService(command, () =>
    updateOrganization(ctx.service, id, change),
  );
  return org;
}

export async function orgsCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
  plans: () => Plans,
): Promise<void> {
  if (sub === 'pause' || sub === 'resume') {
    const command = `orgs ${sub}` as const;
    const a = commandArgs(COMMAND_SPECS[command], argv);
    const id = idArg(command, '<orgId>', a.positionals.orgId);
    const org = await withContext(ctx, (c) => changeOrganization(c, command, id, { paused: sub === 'pause' }));
    output(a.flags.has('json'), org, [
      `Organization ${org.id} "${org.name}" is ${org.paused ? 'paused: every /v2 and /v1 call is refused' : 'active'}.`,
    ]);
    return;
  }
  if (sub === 'plan') {
    const a = commandArgs(COMMAND_SPECS['orgs plan'], argv);
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
