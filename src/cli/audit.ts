// `keygate audit list|export|verify`: the audit trail of access changes (src/access/service/audit.ts),
// read without SQL. `list` shows a page, newest first; `export` writes every matching row, oldest first,
// as JSON lines (--json on list does the same for its page); `verify` checks the hash chain and exits 1
// naming the first row that does not follow.
import { exportAudit, listAudit, verifyAudit, AUDIT_PAGE_MAX, type AuditFilter } from '../access/service/audit.js';
import { commandArgs, idArg, oneOf, UsageError } from './args.js';
import { withContext, type AdminContext } from './context.js';
import { CommandError, table } from './output.js';
import { parseInstant } from './durations.js';
import { COMMAND_SPECS } from './specs.js';
import { viaService } from './service.js';

const ACTORS = ['admin-token', 'user', 'cli', 'internal', 'seed', 'api-key'] as const;

function filterOf(command: string, values: Record<string, string>): AuditFilter {
  const f: AuditFilter = {};
  if (values.org !== undefined) f.organizationId = idArg(command, '--org', values.org);
  if (values.actor !== undefined) f.actorKind = oneOf(command, '--actor', values.actor, ACTORS);
  if (values['actor-id'] !== undefined) f.actorId = values['actor-id'];
  if (values.action !== undefined) {
    // `key.rotate`, or `key.` for every action on keys.
    if (!/^[a-z][a-z-]*\.([a-z][a-z-]*)?$/.test(values.action))
      throw new UsageError(`${command}: --action must be like key.rotate, or key. for every key action`);
    f.action = values.action;
  }
  if (values['target-type'] !== undefined) f.targetType = values['target-type'];
  if (values.target !== undefined) f.targetId = values.target;
  if (values.since !== undefined) f.since = parseInstant(command, '--since', values.since);
  if (values.until !== undefined) f.until = parseInstant(command, '--until', values.until);
  return f;
}

export async function auditCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
): Promise<void> {
  if (sub === 'list') {
    const a = commandArgs(COMMAND_SPECS['audit list'], argv);
    const f = filterOf('audit list', a.values);
    if (a.values.limit !== undefined) {
      f.limit = Number(a.values.limit);
      if (!/^[1-9][0-9]{0,3}$/.test(a.values.limit) || f.limit > AUDIT_PAGE_MAX)
        throw new UsageError(`audit list: --limit must be 1 to ${AUDIT_PAGE_MAX}`);
    }
    if (a.values.before !== undefined) f.beforeId = idArg('audit list', '--before', a.values.before);
    const rows = await withContext(ctx, (c) => viaService('audit list', () => listAudit(c.service, f)));
    if (a.flags.has('json')) {
      process.stdout.write(rows.map((r) => JSON.stringify(r) + '\n').join(''));
      return;
    }
    const lines = table(
      ['id', 'at', 'actor', 'action', 'target', 'org', 'request'],
      rows.map((r) => [
        r.id,
        r.at,
        [r.actor.kind, r.actor.id, r.actor.name].filter(Boolean).join(':'),
        r.action,
        `${r.targetType} ${r.targetIds.join(',')}`,
        r.organizationId,
        r.requestId,
      ]),
    );
    process.stdout.write(lines.join('\n') + '\n');
    return;
  }
  if (sub === 'export') {
    const a = commandArgs(COMMAND_SPECS['audit export'], argv);
    const f = filterOf('audit export', a.values);
    await withContext(ctx, async (c) => {
      // A row at a time to stdout: an export of years of rows never sits in memory whole.
      for await (const row of exportAudit(c.service, f)) {
        if (!process.stdout.write(JSON.stringify(row) + '\n'))
          await new Promise((r) => process.stdout.once('drain', r));
      }
    });
    return;
  }
  if (sub === 'verify') {
    const a = commandArgs(COMMAND_SPECS['audit verify'], argv);
    const result = await withContext(ctx, (c) => verifyAudit(c.service));
    if (a.flags.has('json')) process.stdout.write(JSON.stringify(result) + '\n');
    else if (result.ok)
      process.stdout.write(
        result.rows
          ? `audit trail intact: ${result.rows} row${result.rows === 1 ? '' : 's'}, ids ${result.firstId} to ${result.lastId}; head hash ${result.headHash}\n`
          : `audit trail intact: no rows; head hash ${result.headHash || '(none)'}\n`,
      );
    if (!result.ok)
      throw new CommandError(
        `audit verify: the trail is broken at row ${result.row}: ${result.reason} (the ${result.checked} before it verify)`,
      );
    return;
  }
  throw new UsageError(`audit: expected list, export or verify${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
}
