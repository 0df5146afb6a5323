// `keygate sessions create`: a session of a user, for the session-authenticated /api-keys routes of
// the backend (docs/decisions.md section 7, cookie `session=<token>`). Like a key's secret, the token is shown
// once and stored only as its keyed hash; the service layer (src/access/service/sessions.ts) writes and audits it.
import { createSession } from '../access/service/sessions.js';
import { commandArgs, idArg, required, UsageError } from './args.js';
import { parseTtl } from './durations.js';
import { COMMAND_SPECS } from './specs.js';
import { withContext, type AdminContext } from './context.js';
import { output } from './output.js';
import { viaService } from './service.js';

export async function sessionsCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
): Promise<void> {
  if (sub !== 'create') throw new UsageError(`sessions: expected create${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
  const command = 'sessions create' as const;
  const a = commandArgs(COMMAND_SPECS[command], argv);
  const userId = idArg(command, '--user', required(command, a, 'user'));
  const ttlMs = parseTtl(command, a.values.ttl);
  const session = await withContext(ctx, (c) => viaService(command, () => createSession(c.service, { userId, ttlMs })));
  output(a.flags.has('json'), session, [
    `Session of user ${userId} (organization ${session.organizationId}) until ${session.expiresAt}.`,
    `Token, shown only this once (send it as the cookie session=<token> to the backend's /api-keys):`,
    `  ${session.token}`,
  ]);
}
