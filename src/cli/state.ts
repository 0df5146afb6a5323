// `keygate export`, `keygate diff <file>` and `keygate apply <file>`: the declarative state at a shell
// and in CI (docs/declarative-state.md). The rules live in src/access/state/; this file reads and
// writes files and prints. A file with mistakes prints one line per mistake, `<file>: <path>: <what>`,
// and exits 2 having changed nothing; `diff --exit-code` exits 1 when there are changes.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { applyState, diffState, exportState, StateMistakes, type StateResult } from '../access/state/apply.js';
import { parseState, serializeState, type StateFormat } from '../access/state/document.js';
import type { StateDocument } from '../access/state/schema.js';
import type { Profile } from '../config/profile/types.js';
import type { Change, Printed } from '../access/state/plan.js';
import { reasonOf } from '../config/errors.js';
import { commandArgs, oneOf, UsageError, type ParsedArgs } from './args.js';
import { osUser, withContext, type AdminContext } from './context.js';
import { output } from './output.js';
import { viaService } from './service.js';
import { STATE_SPECS } from './state-specs.js';

type Open = () => Promise<AdminContext>;
/** The profile in force, read once per command: a file's keys are of its key types. */
type ProfileOf = () => Profile;

/** Exit 2 with one line per mistake, each naming the file. */
function refuse(file: string, mistakes: string[]): void {
  for (const m of mistakes) process.stderr.write(`${file}: ${m}\n`);
  process.exitCode = 2;
}

function readDocument(command: string, file: string, profile: Profile): StateDocument | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${command}: cannot read ${file}: ${reasonOf(err) ?? (err as Error).message}`);
  }
  const parsed = parseState(text, profile);
  if (parsed.ok) return parsed.doc;
  refuse(file, parsed.mistakes);
  return null;
}

const shown = (v: unknown) => (v === undefined ? 'absent' : JSON.stringify(v));
const SIGN = { create: '+', update: '~', revoke: '-', delete: '-' } as const;

function changeLines(changes: Change[]): string[] {
  return changes.flatMap((c) => [
    `${SIGN[c.kind]} ${c.kind} ${c.what}`,
    ...c.fields.map((f) => `    ${f.field}: ${'from' in f ? `${shown(f.from)} → ${shown(f.to)}` : shown(f.to)}`),
  ]);
}

function summary(changes: Change[], done: boolean): string {
  if (!changes.length) return 'No changes.';
  const counts = (['create', 'update', 'revoke', 'delete'] as const)
    .map((k) => [k, changes.filter((c) => c.kind === k).length] as const)
    .filter(([, n]) => n)
    .map(([k, n]) => `${n} to ${k}`);
  const n = `${changes.length} change${changes.length === 1 ? '' : 's'}`;
  return done ? `Applied ${n} (${counts.join(', ')}).` : `${n}: ${counts.join(', ')}.`;
}

function keptLines(kept: string[]): string[] {
  return kept.length ? ['Not in the file, left as is:', ...kept.map((k) => `    ${k}`)] : [];
}

const asJson = (r: StateResult) => ({
  changes: r.changes.map((c) => ({ kind: c.kind, what: c.what, fields: c.fields })),
  kept: r.kept,
});

function printedLines(printed: Printed[]): string[] {
  if (!printed.length) return [];
  return ['Secrets made by this apply, shown only this once:', ...printed.map((p) => `    ${p.what}: ${p.secret}`)];
}

/**
 * Diff or apply: the file read and checked (its mistakes refused, exit 2, before any database is
 * opened), then `fn` with the command's arguments, the document and the context, whose StateMistakes
 * (the mistakes only the database shows) are refused the same way.
 */
async function onFile(
  spec: (typeof STATE_SPECS)['diff' | 'apply'],
  open: Open,
  profileOf: ProfileOf,
  argv: readonly string[],
  fn: (a: ParsedArgs, doc: StateDocument, c: AdminContext) => Promise<void>,
): Promise<void> {
  const a = commandArgs(spec, argv);
  const file = a.positionals.file;
  const doc = readDocument(spec.name, file, profileOf());
  if (!doc) return;
  try {
    await withContext(open, (c) => viaService(spec.name, () => fn(a, doc, c)));
  } catch (err) {
    if (!(err instanceof StateMistakes)) throw err;
    refuse(file, err.mistakes);
  }
}

async function exportCommand(open: Open, argv: readonly string[]): Promise<void> {
  const a = commandArgs(STATE_SPECS.export, argv);
  const out = a.values.out;
  const format: StateFormat =
    a.values.format !== undefined
      ? oneOf('export', '--format', a.values.format, ['yaml', 'json'] as const)
      : out?.endsWith('.json')
        ? 'json'
        : 'yaml';
  const { doc, mistakes } = await withContext(open, (c) => exportState(c.service));
  const text = serializeState(doc, format);
  // Written all the same (it is the database's state), but `apply` would refuse it until they are fixed.
  for (const m of mistakes) process.stderr.write(`keygate: warning: ${out ?? 'the export'}: ${m}\n`);
  if (out === undefined) {
    process.stdout.write(text);
    return;
  }
  // Whole or not at all: a file in git is never left half written.
  const partial = `${out}.${process.pid}.tmp`;
  writeFileSync(partial, text);
  renameSync(partial, out);
  process.stderr.write(`Wrote ${out} (${doc.organizations?.length ?? 0} organizations).\n`);
}

const diffCommand = (open: Open, profileOf: ProfileOf, argv: readonly string[]) =>
  onFile(STATE_SPECS.diff, open, profileOf, argv, async (a, doc, c) => {
    const r = await diffState(c.service, doc, { prune: a.flags.has('prune') });
    output(a.flags.has('json'), asJson(r), [
      ...changeLines(r.changes),
      summary(r.changes, false),
      ...keptLines(r.kept),
    ]);
    if (a.flags.has('exit-code') && r.changes.length) process.exitCode = 1;
  });

const applyCommand = (open: Open, profileOf: ProfileOf, argv: readonly string[]) =>
  onFile(STATE_SPECS.apply, open, profileOf, argv, async (a, doc, c) => {
    const name = `apply ${basename(a.positionals.file)}`;
    const r = await applyState({ ...c.service, actor: { kind: 'cli', osUser: osUser(), name } }, doc, {
      prune: a.flags.has('prune'),
      env: process.env,
    });
    output(a.flags.has('json'), { ...asJson(r), secrets: r.printed, requestId: r.requestId }, [
      ...changeLines(r.changes),
      summary(r.changes, true),
      ...keptLines(r.kept),
      ...printedLines(r.printed),
    ]);
  });

export async function stateCommand(
  open: Open,
  command: string,
  argv: readonly string[],
  profileOf: ProfileOf,
): Promise<void> {
  if (command === 'export') return exportCommand(open, argv);
  if (command === 'diff') return diffCommand(open, profileOf, argv);
  return applyCommand(open, profileOf, argv);
}
