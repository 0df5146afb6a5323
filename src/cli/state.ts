// `keygate export`, `keygate diff <file>` and `keygate apply <file>`: the declarative state at a shell
// and in CI (docs/declarative-state.md). The rules live in src/access/state/; this file reads and
// writes files and prints. A file with mistakes prints one line per mistake, `<file>: <path>: <what>`,
// and exits 2 having changed nothing; `diff --exit-code` exits 1 when there are changes.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { applyState, diffState, exportState, StateMistakes, type StateResult } from '../access/state/apply.js';
import { parseState, serializeState, type StateFormat } from '../access/state/document.js';
import type { StateDocument } from '../access/state/schema.js';
import type { Change, Printed } from '../access/state/plan.js';
import { reasonOf } from '../config/errors.js';
import { commandArgs, oneOf, UsageError } from './args.js';
import { osUser, withContext, type AdminContext } from './context.js';
import { output } from './output.js';
import { viaService } from './service.js';
import { STATE_SPECS } from './state-specs.js';

type Open = () => Promise<AdminContext>;

/** Exit 2 with one line per mistake, each naming the file. */
function refuse(file: string, mistakes: string[]): void {
  for (const m of mistakes) process.stderr.write(`${file}: ${m}\n`);
  process.exitCode = 2;
}

function readDocument(command: string, file: string): StateDocument | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${command}: cannot read ${file}: ${reasonOf(err) ?? (err as Error).message}`);
  }
  const parsed = parseState(text);
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

/** Diff or apply, their mistakes refused the same way. */
async function withMistakes(file: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
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
  const doc = await withContext(open, (c) => exportState(c.service));
  const text = serializeState(doc, format);
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

async function diffCommand(open: Open, argv: readonly string[]): Promise<void> {
  const a = commandArgs(STATE_SPECS.diff, argv);
  const file = a.positionals.file;
  const doc = readDocument('diff', file);
  if (!doc) return;
  await withMistakes(file, async () => {
    const r = await withContext(open, (c) =>
      viaService('diff', () => diffState(c.service, doc, { prune: a.flags.has('prune') })),
    );
    output(a.flags.has('json'), asJson(r), [
      ...changeLines(r.changes),
      summary(r.changes, false),
      ...keptLines(r.kept),
    ]);
    if (a.flags.has('exit-code') && r.changes.length) process.exitCode = 1;
  });
}

async function applyCommand(open: Open, argv: readonly string[]): Promise<void> {
  const a = commandArgs(STATE_SPECS.apply, argv);
  const file = a.positionals.file;
  const doc = readDocument('apply', file);
  if (!doc) return;
  await withMistakes(file, async () => {
    const r = await withContext(open, (c) =>
      viaService('apply', () =>
        applyState({ ...c.service, actor: { kind: 'cli', osUser: osUser(), name: `apply ${basename(file)}` } }, doc, {
          prune: a.flags.has('prune'),
          env: process.env,
        }),
      ),
    );
    output(a.flags.has('json'), { ...asJson(r), secrets: r.printed, requestId: r.requestId }, [
      ...changeLines(r.changes),
      summary(r.changes, true),
      ...keptLines(r.kept),
      ...printedLines(r.printed),
    ]);
  });
}

export async function stateCommand(open: Open, command: string, argv: readonly string[]): Promise<void> {
  if (command === 'export') return exportCommand(open, argv);
  if (command === 'diff') return diffCommand(open, argv);
  return applyCommand(open, argv);
}
