// Arguments of the key-management commands: `--name value`, `--name=value`, boolean flags and
// positionals. Every mistake is a one-line UsageError (exit code 2) that names the command and the
// option, in our words rather than node:util's.
import { ConfigError } from '../config/errors.js';
import { isDbId } from '../config/contract.js';

/** Bad arguments: the CLI prints the message on one line and exits with code 2, like a bad setting. */
export class UsageError extends ConfigError {
  override name = 'UsageError';
}

export interface ArgSpec {
  /** Options that take a value. */
  values?: readonly string[];
  /** Options that take none. */
  flags?: readonly string[];
  /** Names of the positional arguments, all required. */
  positionals?: readonly string[];
}

export interface ParsedArgs {
  values: Record<string, string>;
  flags: Set<string>;
  positionals: Record<string, string>;
}

export function parseArgs(command: string, argv: readonly string[], spec: ArgSpec): ParsedArgs {
  const values: Record<string, string> = {};
  const flags = new Set<string>();
  const positional: string[] = [];
  const valueNames = new Set(spec.values ?? []);
  const flagNames = new Set([...(spec.flags ?? []), 'json']);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--') || arg === '--') {
      if (arg !== '--') positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (flagNames.has(name)) {
      if (eq >= 0) throw new UsageError(`${command}: --${name} takes no value`);
      flags.add(name);
    } else if (valueNames.has(name)) {
      if (name in values) throw new UsageError(`${command}: --${name} is given twice`);
      const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || (eq < 0 && value.startsWith('--')))
        throw new UsageError(`${command}: --${name} needs a value`);
      values[name] = value;
    } else {
      throw new UsageError(`${command}: unknown option --${name}`);
    }
  }
  const names = spec.positionals ?? [];
  if (positional.length < names.length) throw new UsageError(`${command}: missing <${names[positional.length]}>`);
  if (positional.length > names.length)
    throw new UsageError(`${command}: unexpected argument ${JSON.stringify(positional[names.length])}`);
  return { values, flags, positionals: Object.fromEntries(names.map((n, i) => [n, positional[i]])) };
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
