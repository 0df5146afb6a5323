// `keygate orgs create`: a new organization (under a rest profile, a consumer its keys belong to).
// `keygate orgs pause|resume|plan`: what the billing system does through PATCH
// /internal/organizations/{id} (docs/decisions.md section 7), through the same service operation: a plan change
// lowers every mailbox above the new plan's cap, every change is audited and bumps the organization's
// access version so the gateways apply it to the very next request.
import type { Profile } from '../config/profile/types.js';
import {
  createOrganization,
  updateOrganization,
  type NewOrganization,
  type OrganizationPatch,
} from '../access/service/organizations.js';
import { commandArgs, idArg, oneOf, required, UsageError } from './args.js';
import { limitsChange } from './limits.js';
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
  profile: () => Profile,
): Promise<void> {
  const plans = () => profile().plans;
  if (sub === 'create') {
    const a = commandArgs(COMMAND_SPECS['orgs create'], argv);
    const input: NewOrganization = { name: required('orgs create', a, 'name') };
    if (a.values.plan !== undefined) input.plan = oneOf('orgs create', '--plan', a.values.plan, Object.keys(plans()));
    if (a.flags.has('paused')) input.paused = true;
    const limits = limitsChange('orgs create', a, false);
    if (limits) input.limits = limits;
    const org = await withContext(ctx, (c) => viaService('orgs create', () => createOrganization(c.service, input)));
    const { partnerCallback: _callback, warmupCap: _cap, ...shown } = org;
    const what = profile().kind === 'rest' ? 'consumer' : 'organization';
    output(a.flags.has('json'), shown, [
      `Created ${what} ${org.id} "${org.name}" on plan ${org.plan ?? 'none (free limits)'}${org.paused ? ', paused' : ''}.`,
      `Its keys: keygate keys create --type <type> --org ${org.id} --name <name>`,
    ]);
    return;
  }
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
  throw new UsageError(
    `orgs: expected create, pause, resume, plan or limits${sub ? ` (got ${JSON.stringify(sub)})` : ''}`,
  );
}
