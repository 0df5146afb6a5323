// Arguments of the commands, read by node:util's parseArgs in strict mode: an option the command does
// not declare, a value missing, a flag given a value are refused. Every mistake is a one-line
// UsageError (exit code 2) that names the command and the option, in our words rather than
// node:util's (its messages span several lines).
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/errors.js';
import { isDbId } from '../config/contract.js';

/** Bad arguments: the CLI prints the message on one line and exits with code 2, like a bad setting. */
export class UsageError extends ConfigError {
  override name = 'UsageError';
}

/** One option as parseArgs takes it, with what `--help` says of it. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  default?: string;
  /** The value's name in the help (`<id>`). */
  arg?: string;
  help?: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** A command: its options and positionals for parseArgs, and its `--help`. */
export interface CommandSpec {
  /** `keys create`: the words after `keygate`, and the start of every message about its arguments. */
  name: string;
  /** Its forms, each after the name (`<keyId> [--grace 24h]`). */
  synopsis: readonly string[];
  summary: string;
  options: OptionSpecs;
  /** Names of the positional arguments, all required. */
  positionals?: readonly string[];
  example: string;
}

export interface ParsedArgs {
  values: Record<string, string>;
  flags: Set<string>;
  positionals: Record<string, string>;
}

/** What parseArgs gives back, as the commands read it. */
export interface Parsed {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
  tokens: { kind: string; name?: string }[];
}

/** `--name -x`: a value may start with one dash, which node:util would take for an option. */
function withDashValues(argv: readonly string[], options: OptionSpecs): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') return [...out, ...argv.slice(i)];
    const name = arg.startsWith('--') ? arg.slice(2) : '';
    const next = argv[i + 1];
    if (Object.hasOwn(options, name) && options[name].type === 'string' && next !== undefined && /^-[^-]/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** The first mistake of `args`, in one line: node:util's own error names it over several. */
function mistake(args: string[], options: OptionSpecs, allowPositionals: boolean, err: Error): string {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'positional' && !allowPositionals) return `unexpected argument ${JSON.stringify(t.value)}`;
    if (t.kind !== 'option') continue;
    if (!Object.hasOwn(options, t.name)) return `unknown option ${t.rawName}`;
    if (options[t.name].type === 'boolean' && t.value !== undefined) return `${t.rawName} takes no value`;
    if (options[t.name].type === 'string' && (t.value === undefined || (!t.inlineValue && /^-./.test(t.value))))
      return `${t.rawName} needs a value`;
  }
  return err.message.split('\n')[0];
}

/** node:util's parseArgs, strict, with the options' types and defaults; a mistake is one UsageError line. */
export function strictArgs(argv: readonly string[], options: OptionSpecs, allowPositionals = true): Parsed {
  const args = withDashValues(argv, options);
  // parseArgs takes only what it knows of an option.
  const config = Object.fromEntries(
    Object.entries(options).map(([name, o]) => [
      name,
      { type: o.type, ...(o.multiple && { multiple: true }), ...(o.default !== undefined && { default: o.default }) },
    ]),
  );
  try {
    return parseArgs({ args, options: config, strict: true, allowPositionals, tokens: true }) as Parsed;
  } catch (err) {
    throw new UsageError(mistake(args, config, allowPositionals, err as Error));
  }
}

/** Every command also takes --json (one JSON document on stdout). */
const JSON_FLAG: OptionSpec = { type: 'boolean', help: 'the result as JSON on stdout' };

/** A command's arguments: each string option at most once, every positional given, no other. */
export function commandArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs {
  const command = spec.name;
  const options: OptionSpecs = { ...spec.options, json: JSON_FLAG };
  let parsed: Parsed;
  try {
    parsed = strictArgs(argv, options);
  } catch (err) {
    throw err instanceof UsageError ? new UsageError(`${command}: ${err.message}`) : err;
  }
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind !== 'option' || options[t.name!].type !== 'string') continue;
    if (seen.has(t.name!)) throw new UsageError(`${command}: --${t.name} is given twice`);
    seen.add(t.name!);
  }
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  for (const [name, v] of Object.entries(parsed.values)) {
    if (typeof v === 'string') values[name] = v;
    else if (v === true) flags.add(name);
  }
  const names = spec.positionals ?? [];
  const given = parsed.positionals;
  if (given.length < names.length) throw new UsageError(`${command}: missing <${names[given.length]}>`);
  if (given.length > names.length)
    throw new UsageError(`${command}: unexpected argument ${JSON.stringify(given[names.length])}`);
  return { values, flags, positionals: Object.fromEntries(names.map((n, i) => [n, given[i]])) };
}

/** A command that takes no argument at all (the programs: their settings come from the environment). */
export function noArguments(command: string, argv: readonly string[]): void {
  try {
    strictArgs(argv, {}, false);
  } catch (err) {
    throw err instanceof UsageError ? new UsageError(`${command}: ${err.message}`) : err;
  }
}

/** A database id: a positive integer within PostgreSQL's integer range. */
export function idArg(command: string, what: string, raw: string): number {
  if (!isDbId(raw)) {
    throw new UsageError(`${command}: ${what} must be a positive integer id (got ${JSON.stringify(raw)})`);
  }
  return Number(raw);
}

export function required(command: string, args: ParsedArgs, name: string): string {
  const v = args.values[name];
  if (v === undefined) throw new UsageError(`${command}: --${name} is required`);
  return v;
}

export function oneOf<T extends string>(command: string, what: string, raw: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new UsageError(`${command}: ${what} must be one of ${allowed.join(', ')} (got ${JSON.stringify(raw)})`);
  }
  return raw as T;
}
