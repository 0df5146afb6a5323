import type { z } from 'zod';

/** A configuration problem; its message is one line naming the field. The CLI exits with code 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * One line naming the field of a schema issue, in our words: zod's own ("Invalid input: expected
 * number, received NaN") is written for programmers. A message a schema gives itself is kept.
 */
export function formatZodIssue(what: string, issue: z.core.$ZodIssue | undefined, input?: unknown): string {
  if (!issue) return `${what}: invalid`;
  let path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    path = [path, keys[0]].filter(Boolean).join('.');
    return `${what} ${path}: unknown field`;
  }
  // zod's issue does not carry the value: a field left out is found in the input itself.
  const value = issue.path.reduce<unknown>(
    (v, k) => (v === null || typeof v !== 'object' ? undefined : (v as Record<PropertyKey, unknown>)[k]),
    input,
  );
  const missing = input !== undefined && issue.path.length > 0 && value === undefined;
  return `${what} ${path || '(root)'}: ${missing ? 'is required' : describeIssue(issue)}`;
}

const ZOD_DEFAULT_MESSAGE = /^(Invalid|Too (big|small)|Unrecognized)\b/;

const TYPE_WORDS: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  null: 'null',
};

function describeIssue(issue: z.core.$ZodIssue): string {
  if (!ZOD_DEFAULT_MESSAGE.test(issue.message)) return issue.message;
  // The issue's own fields (origin, minimum, maximum, format, ...) differ by its code.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const i = issue as z.core.$ZodIssue & Record<string, any>;
  const unit = (n: number) =>
    i.origin === 'string'
      ? ` character${n === 1 ? '' : 's'}`
      : i.origin === 'array' || i.origin === 'set'
        ? ` item${n === 1 ? '' : 's'}`
        : '';
  switch (i.code) {
    case 'invalid_type':
      if (/received undefined$/.test(i.message)) return 'is required';
      return `must be ${TYPE_WORDS[i.expected] ?? i.expected}`;
    case 'too_big':
      return `must be at most ${i.inclusive === false ? Number(i.maximum) - 1 : i.maximum}${unit(Number(i.maximum))}`;
    case 'too_small':
      if (Number(i.minimum) === 1 && i.origin !== 'number') return 'must not be empty';
      return `must be at least ${i.inclusive === false ? Number(i.minimum) + 1 : i.minimum}${unit(Number(i.minimum))}`;
    case 'invalid_value':
      return i.values.length === 1
        ? `must be ${JSON.stringify(i.values[0])}`
        : `must be one of ${i.values.map(String).join(', ')}`;
    case 'invalid_format':
      if (i.format === 'url') return 'must be a URL';
      if (i.format === 'email') return 'must be an email address';
      return i.format === 'regex' ? `must match ${i.pattern}` : `must be a valid ${i.format}`;
    default:
      return 'is invalid';
  }
}

/** Words for the errno and PostgreSQL codes met at start-up, instead of errno's own text. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'no answer in time',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOENT: 'no such file or directory',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
};

/** The reason of a connection or file error in a few words, or null when it is neither. */
export function reasonOf(err: unknown): string | null {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (REASONS[code]) return REASONS[code];
  // PostgreSQL refusing the login or the database: its own sentence names what is wrong.
  if (/^(28|3D)/.test(code)) return message;
  if (/timeout|timed out/i.test(message)) return 'no answer in time';
  if (/^(WRONGPASS|NOAUTH)/.test(message)) return 'authentication refused';
  return null;
}

/** Where a connection string points, without its credentials: `host:port/database`. */
export function targetOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return 'the configured address';
  }
}

/**
 * The start-up failure of a dependency named by a setting, as one line naming it: `err` becomes a
 * ConfigError when it is a connection or file error; anything else (a bug) is returned unchanged.
 */
export function settingError(setting: string, err: unknown, where: { url?: string; path?: string } = {}): unknown {
  if (err instanceof ConfigError) return err;
  const reason = reasonOf(err);
  if (!reason) return err;
  if (where.url) return new ConfigError(`setting ${setting}: cannot connect to ${targetOf(where.url)} (${reason})`);
  return new ConfigError(`setting ${setting}: ${where.path ? `cannot open ${where.path} (${reason})` : reason}`);
}

/** A listener that cannot open, naming the port's setting (PORT, ADMIN_PORT, BACKEND_PORT) or HOST. */
export function listenError(portSetting: string, host: string, port: number, err: unknown): unknown {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'EADDRINUSE') return new ConfigError(`setting ${portSetting}: ${host}:${port} is already in use`);
  if (code === 'EACCES' || code === 'EPERM')
    return new ConfigError(`setting ${portSetting}: no permission to listen on port ${port}`);
  if (code === 'EADDRNOTAVAIL') return new ConfigError(`setting HOST: ${host} is not an address of this machine`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME')
    return new ConfigError(`setting HOST: ${JSON.stringify(host)} is not an address or a known host name`);
  return err;
}

/**
 * A row a data file asks for that the database refuses, in the file's terms: `.organizationId: 9
 * is not in organizations` rather than the foreign-key constraint's name.
 */
export function rowRefusal(err: unknown): string {
  const e = err as { code?: string; detail?: string; message?: string; table?: string; constraint?: string };
  const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  const key = /^Key \((?:\w+\()?(\w+)[^)]*\)+=\((.*)\) (is not present|already exists)/.exec(e.detail ?? '');
  if (e.code === '23503' && key)
    return `.${camel(key[1])}: ${key[2]} is not in ${/"(\w+)"/.exec(e.detail!)?.[1] ?? 'the database'}`;
  if (e.code === '23505' && key) return `.${camel(key[1])}: ${key[2]} is already taken`;
  if (e.code === '23514')
    return `: refused by the check ${e.constraint ?? ''} of ${e.table ?? 'its table'}`.replace('  ', ' ');
  return `: ${e.message ?? String(err)}`;
}

/**
 * A connection error that waiting does not cure: a host name that does not resolve, credentials the
 * server refuses. A dependency that is merely down (refused, silent) is an outage, not a bad setting.
 */
export function isMisconfigured(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  // EAI_AGAIN too: where no resolver answers at start, Redis would never be found by this process either.
  const unresolved = e?.code === 'ENOTFOUND' || e?.code === 'EAI_NONAME' || e?.code === 'EAI_AGAIN';
  return unresolved || /^(WRONGPASS|NOAUTH|ERR AUTH|ERR invalid password)/.test(String(e?.message ?? ''));
}
