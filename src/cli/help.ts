// `keygate --help`, `keygate <command> --help`, `keygate help <command>` and `keygate --version`:
// answered before any setting is read, from the commands' specs (src/cli/specs.ts), without loading
// the commands themselves.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandSpec } from './args.js';
import { type PROGRAMS } from './commands.js';
import { PACKAGE_ROOT } from './paths.js';
import { COMMAND_SPECS } from './specs.js';
import { STATE_SPECS } from './state-specs.js';

const EXIT_CODES = 'Exit codes: 0 done, 1 refused (not found), 2 bad arguments or settings.';
const TIME = '<time>: 2026-12-31T23:59:59Z (a zone is required), 2026-12-31 (UTC midnight) or +30d, +12h, +90m.';

const program = (name: string, summary: string, example: string): CommandSpec => ({
  name,
  synopsis: [''],
  summary,
  options: {},
  example,
});

/** The programs: they read settings from the environment (docs/settings.md), no option. */
const PROGRAM_SPECS: Record<(typeof PROGRAMS)[number], CommandSpec> = {
  start: program(
    'start',
    'All in one process: the gateway, the backend, the admin listener and (with ADMIN_API_PORT) the admin API; PGlite in DATA_DIR unless DATABASE_URL; loads SEED_FILE (default the demo seed) and prints its keys. The default command.',
    'ADMIN_API_PORT=8090 keygate start',
  ),
  gateway: program(
    'gateway',
    'The gateway alone, with its admin listener (WORKERS > 1: a cluster). Needs DATABASE_URL and GATEWAY_SECRET.',
    'DATABASE_URL=postgres://... REDIS_URL=redis://... GATEWAY_SECRET=... UPSTREAM_URL=http://backend:8081 keygate gateway',
  ),
  backend: program(
    'backend',
    'The reference backend alone. Needs DATABASE_URL, GATEWAY_SECRET, INTERNAL_TOKEN and CREDENTIAL_KEYS.',
    'DATABASE_URL=postgres://... GATEWAY_SECRET=... INTERNAL_TOKEN=... CREDENTIAL_KEYS=k1:... keygate backend',
  ),
  migrate: program(
    'migrate',
    'Applies the database migrations (as the schema owner: DATABASE_APP_ROLE gets its grants), then exits.',
    'DATABASE_URL=postgres://... keygate migrate',
  ),
  seed: program(
    'seed',
    'Applies the migrations and SEED_FILE (default the demo seed), then exits.',
    'DATABASE_URL=postgres://... SEED_FILE=config/demo-seed.json keygate seed',
  ),
};

const specs = (): CommandSpec[] => [
  ...Object.values(PROGRAM_SPECS),
  ...Object.values(COMMAND_SPECS),
  ...Object.values(STATE_SPECS),
];

/** A paragraph in lines of at most 100 characters. */
function wrap(text: string): string[] {
  const lines = [''];
  for (const word of text.split(' ')) {
    const last = lines.length - 1;
    if (lines[last] && lines[last].length + word.length >= 100) lines.push(word);
    else lines[last] += (lines[last] ? ' ' : '') + word;
  }
  return lines;
}

/** A command's forms, one a line (`keys rotate <keyId> [--grace 24h]`). */
const forms = (s: CommandSpec): string[] => s.synopsis.map((f) => `${s.name}${f ? ` ${f}` : ''}`);

export function generalUsage(): string {
  const admin = Object.values(COMMAND_SPECS).flatMap(forms);
  const state = Object.values(STATE_SPECS).flatMap(forms);
  return [
    'usage: keygate <command>',
    '',
    'programs:',
    '  start | gateway | backend        run keygate (see docs/settings.md)',
    '  migrate | seed                   apply the migrations / and SEED_FILE',
    '',
    'key management (DATABASE_URL, or DATA_DIR for PGlite; REDIS_URL when the gateways use Redis):',
    ...admin.map((l) => `  ${l}`),
    '',
    'declarative state (docs/declarative-state.md):',
    ...state.map((l) => `  ${l}`),
    '',
    TIME,
    'Every change is audited (the operator is the OS user). Every command takes --json (one JSON',
    'document on stdout). A new secret or token is printed once.',
    'keygate <command> --help, or keygate help <command>: its options and an example. keygate --version.',
    EXIT_CODES,
    '',
  ].join('\n');
}

/** `keygate keys --help`: the forms of every command of the group. */
function groupUsage(group: string, members: CommandSpec[]): string {
  const subs = members.map((s) => s.name.slice(group.length + 1));
  return [
    `usage: keygate ${group} <${subs.join('|')}> ...`,
    '',
    ...members.flatMap(forms).map((l) => `  ${l}`),
    '',
    `keygate ${group} <command> --help: its options and an example.`,
    '',
  ].join('\n');
}

export function commandUsage(s: CommandSpec): string {
  const options = Object.entries(s.options).map(([name, o]) => [`--${name}${o.arg ? ` ${o.arg}` : ''}`, o.help]);
  const isProgram = Object.hasOwn(PROGRAM_SPECS, s.name);
  if (!isProgram) options.push(['--json', 'the result as JSON on stdout']);
  options.push(['--help', 'this help']);
  const width = Math.max(...options.map(([o]) => o!.length));
  const uses = /<time>/.test(forms(s).join(' ') + JSON.stringify(s.options));
  return [
    ...forms(s).map((f, i) => `${i ? '      ' : 'usage:'} keygate ${f}`),
    '',
    ...wrap(s.summary),
    '',
    'options:',
    ...options.map(([o, help]) => `  ${o!.padEnd(width)}  ${help ?? ''}`),
    '',
    'example:',
    `  ${s.example}`,
    '',
    ...(uses ? [TIME] : []),
    ...(isProgram
      ? ['Settings come from the environment or CONFIG_FILE (docs/settings.md). Exit code 2: a bad setting.']
      : [EXIT_CODES]),
    '',
  ].join('\n');
}

/** The help for the words of a command line (`keys`, `keys create`), or the general usage. */
export function helpFor(words: readonly string[]): string {
  const all = specs();
  const exact = all.find((s) => s.name === words.slice(0, 2).join(' ')) ?? all.find((s) => s.name === words[0]);
  if (exact) return commandUsage(exact);
  const members = all.filter((s) => s.name.startsWith(`${words[0]} `));
  if (members.length === 1) return commandUsage(members[0]);
  return members.length ? groupUsage(words[0], members) : generalUsage();
}

export function version(): string {
  return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** What a command line that asks for help or the version (commands.ts asksForHelp) is answered. */
export function helpOrVersion(argv: readonly string[]): string {
  if (argv[0] === '--version') return `${version()}\n`;
  if (argv[0] === 'help') return helpFor(argv.slice(1));
  // The command's words are those before the first option (`keys create --help`).
  const options = argv.findIndex((a) => a.startsWith('-'));
  return helpFor(argv.slice(0, options < 0 ? argv.length : options));
}
