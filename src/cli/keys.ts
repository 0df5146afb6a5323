// `keygate keys create|list|update|rotate|revoke`: key management at a shell. The rules (secret
// format and keyed hash, known scopes, a workspace key's role capped by its creator's, expiry,
// rotation, metadata) and the audit row live in the service layer (src/access/service/keys.ts); this
// file parses arguments and prints results. The key types are the profile's (PROFILE_FILE): the
// workspace API's workspace, personal and partner, or a rest profile's consumer types.
import { bindingOf, holdsScopes, keyTypesOf, type KeyProfile, type KeyTypeRule } from '../access/key-types.js';
import { SCOPE_NAME } from '../config/profile/schema.js';
import {
  createKey,
  listKeys,
  revokeKey,
  rotateKey,
  updateKey,
  type CreateKeyInput,
  type KeyMetadata,
  type KeyStatus,
  type KeyView,
  type UpdateKeyInput,
} from '../access/service/keys.js';
import { ROLES } from '../config/routes.js';
import { commandArgs, idArg, oneOf, required, UsageError, type ParsedArgs } from './args.js';
import { parseInstant, parseSpan } from './durations.js';
import { COMMAND_SPECS } from './specs.js';
import { unstorableTextAt } from '../db/storable.js';
import { withContext, type AdminContext } from './context.js';
import { iso, output, table } from './output.js';
import { viaService } from './service.js';

const MAX_SCOPES = 32;
/** `--metadata '{"tier":"gold"}'`: a JSON object (at most 1 KiB, checked by the service), or `null`. */
export function parseMetadata(command: string, raw: string): KeyMetadata | null {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new UsageError(`${command}: --metadata must be a JSON object such as {"tier":"gold"}, or null`);
  }
  if (v !== null && (typeof v !== 'object' || Array.isArray(v)))
    throw new UsageError(`${command}: --metadata must be a JSON object, or null`);
  // PostgreSQL's jsonb refuses both, which JSON's \u escapes can spell: refused here, before any database.
  const at = unstorableTextAt(v);
  if (at !== null)
    throw new UsageError(
      `${command}: --metadata must not hold a NUL character or a lone surrogate${at.field ? ` (at ${at.field})` : ''}`,
    );
  return v as KeyMetadata | null;
}

const CREATE = 'keys create';

/** The options that bind a key of each type (docs/decisions.md section 2: the secret's prefix says which). */
function bindingOptions(t: KeyTypeRule): string[] {
  const scopes = holdsScopes(t) ? ['scopes'] : [];
  const binding = bindingOf(t);
  if (binding === 'workspace') return ['workspace', 'role', 'created-by', ...scopes];
  return [binding === 'user' ? 'user' : 'org', ...scopes];
}

/** One of the profile's key types, or the usage error naming them. */
function keyTypeArg(command: string, profile: KeyProfile, raw: string): KeyTypeRule {
  const types = keyTypesOf(profile);
  const name = oneOf(
    command,
    '--type',
    raw,
    types.map((t) => t.name),
  );
  return types.find((t) => t.name === name)!;
}

/** The arguments of `keys create`, checked before the database is opened (exit code 2). */
export function parseCreate(argv: readonly string[], profile: KeyProfile): { input: CreateKeyInput; json: boolean } {
  const a = commandArgs(COMMAND_SPECS[CREATE], argv);
  const rule = keyTypeArg(CREATE, profile, required(CREATE, a, 'type'));
  const type = rule.name;
  const name = required(CREATE, a, 'name').trim();
  if (name.length < 1 || name.length > 100) throw new UsageError(`${CREATE}: --name must be 1 to 100 characters`);
  const scopes =
    a.values.scopes === undefined
      ? []
      : a.values.scopes
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
  const bad = scopes.find((s) => !SCOPE_NAME.test(s));
  if (bad) throw new UsageError(`${CREATE}: --scopes: ${JSON.stringify(bad)} is not a scope (resource:action)`);
  if (scopes.length > MAX_SCOPES) throw new UsageError(`${CREATE}: --scopes: at most ${MAX_SCOPES}`);
  // Each type takes exactly the options that bind it.
  const allowed = bindingOptions(rule);
  const stray = ['workspace', 'user', 'org', 'role', 'scopes', 'created-by'].find(
    (o) => a.values[o] !== undefined && !allowed.includes(o),
  );
  if (stray) throw new UsageError(`${CREATE}: a ${type} key takes no --${stray}`);
  const input: CreateKeyInput = { type, name, scopes };
  if (allowed.includes('workspace')) {
    input.workspaceId = idArg(CREATE, '--workspace', required(CREATE, a, 'workspace'));
    if (a.values.role !== undefined) input.role = oneOf(CREATE, '--role', a.values.role, ROLES);
    if (a.values['created-by'] !== undefined) input.createdBy = idArg(CREATE, '--created-by', a.values['created-by']);
  } else if (allowed.includes('user')) {
    input.userId = idArg(CREATE, '--user', required(CREATE, a, 'user'));
  } else {
    input.organizationId = idArg(CREATE, '--org', required(CREATE, a, 'org'));
  }
  if (a.values['expires-at'] !== undefined)
    input.expiresAt = parseInstant(CREATE, '--expires-at', a.values['expires-at']);
  if (a.values.metadata !== undefined) input.metadata = parseMetadata(CREATE, a.values.metadata);
  return { input, json: a.flags.has('json') };
}

const UPDATE = 'keys update';

export function parseUpdate(argv: readonly string[]): { id: number; input: UpdateKeyInput; json: boolean } {
  const a = commandArgs(COMMAND_SPECS[UPDATE], argv);
  const id = idArg(UPDATE, '<keyId>', a.positionals.keyId);
  const input: UpdateKeyInput = {};
  if (a.values.name !== undefined) input.name = a.values.name;
  if (a.values['expires-at'] !== undefined && a.flags.has('no-expiry'))
    throw new UsageError(`${UPDATE}: --expires-at and --no-expiry exclude each other`);
  if (a.values['expires-at'] !== undefined)
    input.expiresAt = parseInstant(UPDATE, '--expires-at', a.values['expires-at']);
  if (a.flags.has('no-expiry')) input.expiresAt = null;
  if (a.values.metadata !== undefined) input.metadata = parseMetadata(UPDATE, a.values.metadata);
  if (!Object.keys(input).length)
    throw new UsageError(`${UPDATE}: nothing to change: give --name, --expires-at, --no-expiry or --metadata`);
  return { id, input, json: a.flags.has('json') };
}

/** What a key is bound to; a rest profile's organizations are its consumers. */
function where(k: KeyView, profile: KeyProfile): string {
  if (k.workspaceId !== null) return `workspace ${k.workspaceId}, role ${k.role}`;
  if (k.userId !== null) return `user ${k.userId}`;
  return `${profile.kind === 'rest' ? 'consumer' : 'organization'} ${k.organizationId}`;
}

function expiryLine(k: KeyView): string {
  return k.expiresAt ? `${k.status === 'expired' ? 'Expired' : 'Expires'} at ${k.expiresAt}.` : 'Never expires.';
}

function listFilter(a: ParsedArgs, profile: KeyProfile) {
  const f: Parameters<typeof listKeys>[1] = {};
  if (a.values.org !== undefined) f.organizationId = idArg('keys list', '--org', a.values.org);
  if (a.values.workspace !== undefined) f.workspaceId = idArg('keys list', '--workspace', a.values.workspace);
  if (a.values.user !== undefined) f.userId = idArg('keys list', '--user', a.values.user);
  if (a.values.type !== undefined) f.type = keyTypeArg('keys list', profile, a.values.type).name;
  if (a.values.status !== undefined && a.flags.has('active'))
    throw new UsageError('keys list: --status and --active exclude each other');
  if (a.values.status !== undefined)
    f.status = oneOf('keys list', '--status', a.values.status, ['active', 'expired', 'revoked'] as const) as KeyStatus;
  if (a.flags.has('active')) f.status = 'active';
  return f;
}

export async function keysCommand(
  ctx: () => Promise<AdminContext>,
  sub: string | undefined,
  argv: readonly string[],
  profile: () => KeyProfile,
): Promise<void> {
  if (sub === 'create') {
    const { input, json } = parseCreate(argv, profile());
    const { key, secret } = await withContext(ctx, (c) => viaService(CREATE, () => createKey(c.service, input)));
    output(json, { ...key, secret }, [
      `Created ${key.type} key ${key.id} "${key.name}" (${where(key, profile())}${key.scopes.length ? `, scopes ${key.scopes.join(',')}` : ''}). ${expiryLine(key)}`,
      `Secret, shown only this once (keygate keeps a keyed hash of it, never the secret):`,
      `  ${secret}`,
    ]);
    return;
  }
  if (sub === 'list') {
    const a = commandArgs(COMMAND_SPECS['keys list'], argv);
    const f = listFilter(a, profile());
    const keys = await withContext(ctx, (c) => viaService('keys list', () => listKeys(c.service, f)));
    output(
      a.flags.has('json'),
      keys,
      table(
        ['id', 'type', 'name', 'hint', 'org', 'workspace', 'user', 'role', 'status', 'expires', 'last used', 'scopes'],
        keys.map((k) => [
          k.id,
          k.type,
          k.name,
          k.hint,
          k.organizationId,
          k.workspaceId,
          k.userId,
          k.role,
          k.status === 'revoked'
            ? `revoked ${k.revokedAt}`
            : k.previousSecret
              ? `${k.status}, old secret until ${k.previousSecret.expiresAt}`
              : k.status,
          k.expiresAt ?? 'never',
          k.lastUsedAt ?? '',
          k.scopes.join(','),
        ]),
      ),
    );
    return;
  }
  if (sub === 'update') {
    const { id, input, json } = parseUpdate(argv);
    const key = await withContext(ctx, (c) => viaService(UPDATE, () => updateKey(c.service, id, input)));
    output(json, key, [
      `Updated ${key.type} key ${key.id} "${key.name}" (${where(key, profile())}). ${expiryLine(key)}${key.metadata ? ` Metadata: ${Buffer.byteLength(JSON.stringify(key.metadata))} bytes.` : ''}`,
    ]);
    return;
  }
  if (sub === 'rotate') {
    const a = commandArgs(COMMAND_SPECS['keys rotate'], argv);
    const id = idArg('keys rotate', '<keyId>', a.positionals.keyId);
    const graceMs = a.values.grace === undefined ? undefined : parseSpan('keys rotate', '--grace', a.values.grace);
    const { key, secret } = await withContext(ctx, (c) =>
      viaService('keys rotate', () => rotateKey(c.service, id, { graceMs })),
    );
    output(a.flags.has('json'), { ...key, secret }, [
      `Rotated ${key.type} key ${key.id} "${key.name}". ${key.previousSecret ? `The old secret (${key.previousSecret.hint}) works until ${key.previousSecret.expiresAt}.` : 'The old secret no longer works.'}`,
      `New secret, shown only this once (keygate keeps a keyed hash of it, never the secret):`,
      `  ${secret}`,
    ]);
    return;
  }
  if (sub === 'revoke') {
    const a = commandArgs(COMMAND_SPECS['keys revoke'], argv);
    const id = idArg('keys revoke', '<keyId>', a.positionals.keyId);
    // As DELETE /api-keys/{id}: the very next request on every gateway instance is refused.
    const key = await withContext(ctx, (c) => viaService('keys revoke', () => revokeKey(c.service, id)));
    output(a.flags.has('json'), key, [
      `Revoked ${key.type} key ${key.id} "${key.name}" (since ${iso(key.revokedAt!)}).`,
    ]);
    return;
  }
  throw new UsageError(
    `keys: expected create, list, update, rotate or revoke${sub ? ` (got ${JSON.stringify(sub)})` : ''}`,
  );
}
