// `keygate admin-tokens create|list|revoke`: the tokens of the admin HTTP API (ADMIN_API_PORT). A new
// token is printed once; keygate keeps only its keyed hash. Changes are audited with the `cli` actor.
import {
  ADMIN_TOKEN_ROLES,
  createAdminToken,
  listAdminTokens,
  revokeAdminToken,
} from '../access/service/admin-tokens.js';
import { ServiceError } from '../access/service/context.js';
import { commandArgs, idArg, oneOf, required, UsageError } from './args.js';
import { COMMAND_SPECS } from './specs.js';
import { withContext, type AdminContext } from './context.js';
import { CommandError, output, table } from './output.js';

export async function adminTokensCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
): Promise<void> {
  if (sub === 'create') {
    const a = commandArgs(COMMAND_SPECS['admin-tokens create'], argv);
    const name = required('admin-tokens create', a, 'name').trim();
    if (name.length < 1 || name.length > 100)
      throw new UsageError('admin-tokens create: --name must be 1 to 100 characters');
    const role = oneOf('admin-tokens create', '--role', required('admin-tokens create', a, 'role'), ADMIN_TOKEN_ROLES);
    const t = await withContext(ctx, (c) => createAdminToken(c.service, { name, role }));
    output(a.flags.has('json'), t, [
      `Created admin token ${t.id} "${t.name}" (role ${t.role}).`,
      `Token, shown only this once (keygate keeps a keyed hash of it, never the token):`,
      `  ${t.token}`,
    ]);
    return;
  }
  if (sub === 'list') {
    const a = commandArgs(COMMAND_SPECS['admin-tokens list'], argv);
    const rows = await withContext(ctx, (c) => listAdminTokens(c.db, { includeRevoked: a.flags.has('all') }));
    output(
      a.flags.has('json'),
      rows,
      table(
        ['id', 'name', 'role', 'hint', 'created', 'last used', 'revoked'],
        rows.map((t) => [t.id, t.name, t.role, t.hint, t.createdAt, t.lastUsedAt, t.revokedAt]),
      ),
    );
    return;
  }
  if (sub === 'revoke') {
    const a = commandArgs(COMMAND_SPECS['admin-tokens revoke'], argv);
    const id = idArg('admin-tokens revoke', '<tokenId>', a.positionals.tokenId);
    const t = await withContext(ctx, (c) =>
      revokeAdminToken(c.service, id).catch((err) => {
        throw err instanceof ServiceError && err.kind === 'not_found'
          ? new CommandError(`admin-tokens revoke: ${err.message}`)
          : err;
      }),
    );
    output(a.flags.has('json'), t, [`Revoked admin token ${t.id} "${t.name}" (since ${t.revokedAt}).`]);
    return;
  }
  throw new UsageError(`admin-tokens: expected create, list or revoke${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
}
