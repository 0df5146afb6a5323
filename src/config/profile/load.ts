// A profile file read and checked into the Profile every program uses (./types.ts). Each mistake stops
// the start with one line, `profile <file>: <field>: <what is wrong and the fix>` (docs/profiles.md,
// Mistakes), the first one found: a file is fixed one line at a time.
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ConfigError, formatZodIssue, reasonOf } from '../errors.js';
import { loadPlans, parseJsonText, planSchema, type Plans } from '../plans.js';
import { loadRoutes, RouteTable, routeForwarding, routeShape, serviceMap, unknownService } from '../routes.js';
import { defaultCode, REFUSAL_DEFAULTS, REFUSAL_NAMES, type RefusalName } from './refusals.js';
import {
  profileKindSchema,
  restProfileSchema,
  workspaceProfileSchema,
  type RestProfileFile,
  type WorkspaceProfileFile,
} from './schema.js';
import type { HeaderFamilies, InterfaceSpec, KeyTypeDef, ProblemAnswer, Profile } from './types.js';

export interface ProfileFiles {
  PROFILE_FILE: string;
  /** The workspace API's routes and plans: a `workspace` profile states its interfaces only. */
  ROUTES_FILE: string;
  PLANS_FILE: string;
}

export function loadProfile(s: ProfileFiles): Profile {
  return parseProfile(readProfileFile(s.PROFILE_FILE), s.PROFILE_FILE, s);
}

/** A mistake of the file at a field: the one line the start stops with. */
class Mistake {
  constructor(
    readonly path: (string | number)[],
    readonly message: string,
  ) {}
}

export function parseProfile(raw: unknown, file: string, s: Omit<ProfileFiles, 'PROFILE_FILE'>): Profile {
  const at = `profile ${file}:`;
  const kind = profileKindSchema.safeParse(raw);
  if (!kind.success) throw new ConfigError(issueLine(at, profileKindSchema, kind.error.issues[0], raw));
  if (kind.data.kind === 'workspace') {
    const f = parseWith(at, workspaceProfileSchema, raw);
    checkPrefixes(at, [
      ...f.interfaces[0].key.types.map((t, i) => ({ t, path: ['interfaces', 0, 'key', 'types', i] })),
      ...f.interfaces[1].key.types.map((t, i) => ({ t, path: ['interfaces', 1, 'key', 'types', i] })),
    ]);
    return {
      name: f.name,
      kind: 'workspace',
      file,
      interfaces: workspaceInterfaces(f),
      routes: loadRoutes(s.ROUTES_FILE),
      plans: loadPlans(s.PLANS_FILE),
    };
  }
  const f = parseWith(at, restProfileSchema, raw);
  const mistake = restMistake(f);
  if (mistake) throw new ConfigError(`${at} ${mistake.path.join('.')}: ${mistake.message}`);
  return compileRest(f, file);
}

function parseWith<T extends z.ZodType>(at: string, schema: T, raw: unknown): z.output<T> {
  const r = schema.safeParse(raw);
  if (!r.success) throw new ConfigError(issueLine(at, schema, r.error.issues[0], raw));
  return r.data;
}

/** A schema issue as the line: an unknown field names the fields that may stand there. */
function issueLine(at: string, schema: z.ZodType, issue: z.core.$ZodIssue | undefined, raw: unknown): string {
  if (issue?.code !== 'unrecognized_keys') return formatZodIssue(at, issue, raw);
  const path = [...issue.path.map(String), issue.keys[0]].join('.');
  const known = fieldsAt(schema, issue.path);
  return `${at} ${path}: unknown field; remove it${known.length ? ` or use one of ${known.join(', ')}` : ''}`;
}

/** The fields of the object schema at a path of the input (through lists, records and wrappers). */
function fieldsAt(schema: z.ZodType, path: PropertyKey[]): string[] {
  type Def = {
    type: string;
    innerType?: S;
    in?: S;
    shape?: Record<string, S>;
    element?: S;
    valueType?: S;
    items?: S[];
  };
  type S = { _zod: { def: Def } };
  const unwrap = (s: S): S => {
    const d = s._zod.def;
    if (d.innerType) return unwrap(d.innerType);
    return d.type === 'pipe' && d.in ? unwrap(d.in) : s;
  };
  let s: S | undefined = unwrap(schema as unknown as S);
  for (const k of path) {
    const d: Def = s._zod.def;
    s = d.shape?.[String(k)] ?? d.element ?? d.valueType ?? d.items?.[Number(k)];
    if (!s) return [];
    s = unwrap(s);
  }
  return Object.keys(s._zod.def.shape ?? {});
}

// ---- rest -----------------------------------------------------------------------------------------

/** What the schema cannot see: the fields' agreement with one another. The first one found. */
function restMistake(f: RestProfileFile): Mistake | null {
  return (
    keyTypeMistake(f.key.types.map((t, i) => ({ t, path: ['key', 'types', i] }))) ??
    duplicate(
      f.scopes,
      (x) => x,
      ['scopes'],
      (s) => `scope "${s}" is declared twice; remove one`,
    ) ??
    (Object.hasOwn(f.plans, 'free')
      ? null
      : new Mistake(
          ['plans', 'free'],
          'is required (a consumer whose plan is unknown gets it); add a plan named free',
        )) ??
    routeMistake(f) ??
    refusalMistake(f)
  );
}

function duplicate<T>(
  items: T[],
  key: (x: T) => string,
  path: (string | number)[],
  message: (k: string, first: number) => string,
): Mistake | null {
  const seen = new Map<string, number>();
  for (const [i, x] of items.entries()) {
    const k = key(x);
    const first = seen.get(k);
    if (first !== undefined) return new Mistake([...path, i], message(k, first));
    seen.set(k, i);
  }
  return null;
}

type PlacedType = { t: KeyTypeDef; path: (string | number)[] };

/** A key is told apart by its prefix: one that starts another's would read some keys of the other type. */
function keyTypeMistake(types: PlacedType[]): Mistake | null {
  for (const [j, b] of types.entries())
    for (const a of types.slice(0, j)) {
      const other = a.path.join('.');
      if (a.t.name === b.t.name)
        return new Mistake(
          [...b.path, 'name'],
          `"${b.t.name}" is also the name of ${other}; give each key type its own`,
        );
      const relation =
        a.t.prefix === b.t.prefix
          ? 'is also'
          : b.t.prefix.startsWith(a.t.prefix)
            ? `starts with "${a.t.prefix}",`
            : a.t.prefix.startsWith(b.t.prefix)
              ? `starts "${a.t.prefix}",`
              : null;
      if (relation)
        return new Mistake(
          [...b.path, 'prefix'],
          `"${b.t.prefix}" ${relation} the prefix of ${other}, so a key of one type would be read as the other; make neither prefix start the other`,
        );
    }
  return null;
}

function checkPrefixes(at: string, types: PlacedType[]): void {
  const m = keyTypeMistake(types);
  if (m) throw new ConfigError(`${at} ${m.path.join('.')}: ${m.message}`);
}

function routeMistake(f: RestProfileFile): Mistake | null {
  const declared = new Set(f.scopes);
  for (const [i, r] of f.routes.entries()) {
    if (r.path !== f.prefix && !r.path.startsWith(f.prefix + '/'))
      return new Mistake(
        ['routes', i, 'path'],
        `${r.path} is outside the prefix ${f.prefix}; start it with ${f.prefix}/ or change prefix`,
      );
    if (r.scope !== null && !declared.has(r.scope))
      return new Mistake(
        ['routes', i, 'scope'],
        `scope "${r.scope}" is not declared under scopes, so no key can hold it; declare it under scopes or use one of ${[...declared].join(', ') || '(none declared)'}`,
      );
    const service = unknownService(r.service, f.services);
    if (service) return new Mistake(['routes', i, 'service'], service);
  }
  return duplicate(
    f.routes,
    (r) => routeShape(r.method, r.path),
    ['routes'],
    (_, first) =>
      `${f.routes[first].method} ${f.routes[first].path} is routed twice (routes.${first} matches the same requests); remove one`,
  );
}

function refusalMistake(f: RestProfileFile): Mistake | null {
  const given = f.errors.refusals;
  for (const name of Object.keys(given))
    if (!(REFUSAL_NAMES as string[]).includes(name))
      return new Mistake(
        ['errors', 'refusals', name],
        `unknown refusal; the refusals are ${REFUSAL_NAMES.join(', ')} (docs/profiles.md, Refusals)`,
      );
  const byCode = new Map<string, RefusalName>();
  for (const name of REFUSAL_NAMES) {
    const code = given[name]?.code ?? defaultCode(name);
    const other = byCode.get(code);
    if (other) {
      // Name the one the file gave: a default's clash is fixed where the file wrote the code.
      const [named, clashed] = given[name]?.code !== undefined ? [name, other] : [other, name];
      return new Mistake(
        ['errors', 'refusals', named, 'code'],
        `"${code}" is also the code of ${clashed}; two refusals may not share a code, give ${named} another`,
      );
    }
    byCode.set(code, name);
  }
  return null;
}

function headerFamilies(headers: readonly string[]): HeaderFamilies {
  return { xRateLimit: headers.includes('x-ratelimit'), ietf: headers.includes('ietf') };
}

function compileRest(f: RestProfileFile, file: string): Profile {
  const problems = {} as Record<RefusalName, ProblemAnswer>;
  for (const name of REFUSAL_NAMES) {
    const given = f.errors.refusals[name] ?? {};
    const code = given.code ?? defaultCode(name);
    problems[name] = {
      status: given.status ?? REFUSAL_DEFAULTS[name].status,
      code,
      type: given.type ?? f.errors.typeBase + code,
      title: given.title ?? REFUSAL_DEFAULTS[name].title,
    };
  }
  const spec: InterfaceSpec = {
    id: f.name,
    prefix: f.prefix,
    model: 'consumer',
    key: { header: f.key.header, bearer: f.key.header === 'authorization' },
    keyTypes: f.key.types.map((t) => ({ name: t.name, prefix: t.prefix })),
    addressLimit: f.limits.address,
    keyLimit: null,
    headers: headerFamilies(f.limits.headers),
    errors: { format: 'problem', problems },
    identity: f.identity,
  };
  const services = serviceMap(f.services);
  const table = new RouteTable();
  for (const r of f.routes)
    table.add({
      method: r.method,
      path: r.path,
      scope: r.scope,
      minRole: null,
      bucket: r.bucket,
      ...routeForwarding(r, services),
    });
  const plans: Plans = {};
  for (const [name, p] of Object.entries(f.plans))
    plans[name] = planSchema.parse({
      ...p,
      label: p.label ?? name,
      maxWarmupPerAccount: null,
      warmingMailboxCap: null,
      entitlements: [],
    });
  return {
    name: f.name,
    kind: 'rest',
    file,
    interfaces: [spec],
    routes: {
      tables: { [f.name]: table },
      v2: new RouteTable(),
      v1: new RouteTable(),
      scopes: Object.fromEntries(f.scopes.map((s) => [s, null])),
      services,
    },
    plans,
  };
}

// ---- workspace ------------------------------------------------------------------------------------

function workspaceInterfaces(f: WorkspaceProfileFile): InterfaceSpec[] {
  const [v2, v1] = f.interfaces;
  const common = (i: typeof v2 | typeof v1) => ({
    id: i.id,
    prefix: i.prefix,
    model: i.model,
    key: { header: i.key.header, bearer: i.key.header === 'authorization' },
    keyTypes: i.key.types.map((t) => ({ name: t.name, prefix: t.prefix })),
    addressLimit: i.limits.address,
    headers: headerFamilies(i.limits.headers),
    errors: { format: i.errors },
    identity: i.identity,
  });
  return [
    { ...common(v2), keyLimit: null },
    { ...common(v1), keyLimit: v1.limits.key },
  ];
}

// ---- the file -------------------------------------------------------------------------------------

/** The file's text as data: YAML or JSON by its extension. */
export function readProfileFile(file: string): unknown {
  const at = `profile ${file}:`;
  const ext = extname(file).toLowerCase();
  if (!['.yaml', '.yml', '.json'].includes(ext))
    throw new ConfigError(`${at} the file's name must end in .yaml, .yml or .json (its format)`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `${at} cannot read (${reasonOf(err) ?? 'unreadable'}); set PROFILE_FILE to a profile (docs/profiles.md)`,
    );
  }
  if (ext === '.json') return parseJsonText(text, `profile ${file}`);
  const doc = parseDocument(text, { uniqueKeys: true });
  const e = doc.errors[0];
  if (e) {
    const pos = e.linePos?.[0];
    const where = pos ? `line ${pos.line}, column ${pos.col}` : '(text)';
    throw new ConfigError(`${at} ${where}: invalid YAML (${e.message.split('\n')[0].replace(/ at line \d+.*$/, '')})`);
  }
  return doc.toJS();
}
