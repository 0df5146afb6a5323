// `keygate usage key|org|export`: the usage history at a shell (docs/usage.md, Reading and Export). The
// readings, their bounds and the export's format are the service layer's
// (src/access/service/usage-history.ts), as the admin API's; this file parses arguments and prints.
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import {
  EXPORT_FORMATS,
  exportText,
  GRANULARITIES,
  keyUsageHistory,
  monthUsageRows,
  organizationUsageHistory,
  type HistoryQuery,
  type UsageHistory,
} from '../access/service/usage-history.js';
import { commandArgs, idArg, oneOf, required, UsageError, type ParsedArgs } from './args.js';
import { parseDuration, parseInstant } from './durations.js';
import { withContext, type AdminContext } from './context.js';
import { output, table } from './output.js';
import { viaService } from './service.js';
import { COMMAND_SPECS } from './specs.js';

/** `--from -7d` (a span before now), or an instant as every command takes one. */
function instantArg(command: string, option: string, raw: string, now: number): Date {
  const back = raw.startsWith('-') ? parseDuration(raw.slice(1)) : null;
  return back !== null ? new Date(now - back) : parseInstant(command, option, raw, now);
}

function historyArgs(command: string, a: ParsedArgs, now = Date.now()): HistoryQuery {
  const q: HistoryQuery = {};
  if (a.values.from !== undefined) q.from = instantArg(command, '--from', a.values.from, now);
  if (a.values.to !== undefined) q.to = instantArg(command, '--to', a.values.to, now);
  if (a.values.granularity !== undefined)
    q.granularity = oneOf(command, '--granularity', a.values.granularity, GRANULARITIES);
  return q;
}

/** A bucket's start as the table shows it: the day alone by day, else to the minute (UTC). */
const startOf = (h: UsageHistory, start: string) =>
  h.granularity === 'day' ? start.slice(0, 10) : `${start.slice(0, 10)} ${start.slice(11, 16)}`;

/** The reading as lines: what it covers and its totals, then a row per bucket with the outcomes that occurred. */
export function historyLines(h: UsageHistory): string[] {
  const who =
    h.keyId !== undefined ? `Key ${h.keyId} (organization ${h.organizationId})` : `Organization ${h.organizationId}`;
  const shown = h.outcomes.filter((o) => h.totals.outcomes[o] > 0);
  return [
    `${who}, by ${h.granularity} from ${h.from} to ${h.to} (UTC): ${h.totals.admitted} admitted, ${h.totals.refused} refused.`,
    ...table(
      ['start (UTC)', 'admitted', 'refused', ...shown],
      h.buckets.map((b) => [startOf(h, b.start), b.admitted, b.refused, ...shown.map((o) => b.outcomes[o])]),
    ),
  ];
}

/** Every piece to `out`, waiting whenever it asks to. */
async function writeAll(out: Writable, pieces: AsyncIterable<string>): Promise<void> {
  for await (const piece of pieces) if (!out.write(piece)) await once(out, 'drain');
}

/**
 * The export to `file`, written beside it under another name and renamed once whole, so a failed
 * export never leaves a file that looks complete.
 */
async function exportToFile(file: string, pieces: AsyncIterable<string>): Promise<void> {
  const partial = `${file}.partial-${process.pid}`;
  const out = createWriteStream(partial, { flags: 'wx' });
  try {
    await once(out, 'open');
    await writeAll(out, pieces);
    out.end();
    await once(out, 'finish');
    await rename(partial, file);
  } catch (err) {
    out.destroy();
    await rm(partial, { force: true });
    throw err;
  }
}

async function exportCommand(ctx: () => Promise<AdminContext>, argv: readonly string[]): Promise<void> {
  const command = 'usage export';
  const a = commandArgs(COMMAND_SPECS[command], argv);
  const month = required(command, a, 'month');
  if (!/^[2-9][0-9]{3}-(0[1-9]|1[0-2])$/.test(month))
    throw new UsageError(`${command}: --month must be YYYY-MM, e.g. 2026-11 (got ${JSON.stringify(month)})`);
  const organizationId =
    a.values.organization === undefined ? undefined : idArg(command, '--organization', a.values.organization);
  const format = a.values.format === undefined ? 'csv' : oneOf(command, '--format', a.values.format, EXPORT_FORMATS);
  if (a.flags.has('json')) throw new UsageError(`${command}: takes --format jsonl rather than --json`);
  await withContext(ctx, async (c) => {
    const rows = await viaService(command, () => monthUsageRows(c.service, { month, organizationId }));
    const text = exportText(rows, format);
    if (a.values.out !== undefined) await exportToFile(a.values.out, text);
    else await writeAll(process.stdout, text);
  });
}

export async function usageCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
): Promise<void> {
  if (sub === 'key' || sub === 'org') {
    const command = `usage ${sub}` as const;
    const a = commandArgs(COMMAND_SPECS[command], argv);
    const id = idArg(command, sub === 'key' ? '<keyId>' : '<orgId>', a.positionals[sub === 'key' ? 'keyId' : 'orgId']);
    const q = historyArgs(command, a);
    const h = await withContext(ctx, (c) =>
      viaService(command, () =>
        sub === 'key' ? keyUsageHistory(c.service, id, q) : organizationUsageHistory(c.service, id, q),
      ),
    );
    output(a.flags.has('json'), h, historyLines(h));
    return;
  }
  if (sub === 'export') return exportCommand(ctx, argv);
  throw new UsageError(`usage: expected key, org or export${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
}
