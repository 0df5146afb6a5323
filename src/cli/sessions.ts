// `keygate sessions create`: a session of a user, for the session-authenticated /api-keys routes of
// the backend (docs/decisions.md section 7, cookie `session=<token>`). Like a key's secret, the token is shown
// once and stored only as its keyed hash; the service layer (src/access/service/sessions.ts) writes and audits it.
import { createSession } from '../access/service/sessions.js';
import { idArg, parseArgs, required, UsageError } from './args.js';
import { withContext, type AdminContext } from './context.js';
import { output } from './output.js';
import { viaService } from './service.js';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--ttl 30m`, `12h`, `7d` (at most a year). */
export function parseTtl(command: string, raw: string): number {
  const m = /^([1-9][0-9]{0,5})([mhd])$/.exec(raw);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]] : NaN;
  if (!(ms <= 366 * UNIT_MS.d))
    throw new UsageError(
      `${command}: --ttl must be minutes, hours or days such as 30m, 12h or 7d, at most 366d (got ${JSON.stringify(raw)})`,
    );
  return ms;
}

export async function sessionsCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
): Promise<void> {
  if (sub !== 'create') throw new UsageError(`sessions: expected create${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
  const command = 'sessions create';
  const a = parseArgs(command, argv, { values: ['user', 'ttl'] });
  const userId = idArg(command, '--user', required(command, a, 'user'));
  const ttlMs = parseTtl(command, a.values.ttl ?? '24h');
  const session = await withContext(ctx, (c) => viaService(command, () => createSession(c.service, { userId, ttlMs })));
  output(a.flags.has('json'), session, [
    `Session of user ${userId} (organization ${session.organizationId}) until ${session.expiresAt}.`,
    `Token, shown only this once (send it as the cookie session=<token> to the backend's /api-keys):`,
    `  ${session.token}`,
  ]);
}
