// `keygate keys create|list|revoke`: the key management of the backend's /api-keys routes (CONTRACT
// section 7) for an operator at a shell, with the same rules: the secret's format and keyed hash
// (CONTRACT section 2, src/access/secrets.ts), known scopes only, a workspace key's role defaulting to
// ADMIN and capped by its creator's role, and an access-version bump after a revocation.
import { generateSecret, hashSecret, hintOf, type KeyType } from '../access/secrets.js';
import { roleRank } from '../access/principal.js';
import { ROLES } from '../config/routes.js';
import { idArg, oneOf, parseArgs, required, UsageError } from './args.js';
import { withContext, type AdminContext } from './context.js';
import { CommandError, iso, output, table } from './output.js';

const SCOPE = /^[a-z]+:[a-z]+$/;
const MAX_SCOPES = 32;

/** A key as `GET /api-keys` shows it, plus its organization: never its hash, never its secret. */
export function keyView(k: Record<string, any>) {
  return {
    id: k.id,
    organizationId: k.organization_id,
    name: k.name,
    type: k.type as KeyType,
    hint: k.hint,
    workspaceId: k.workspace_id,
    userId: k.user_id,
    role: k.role,
    scopes: k.scopes,
    createdBy: k.created_by,
    createdAt: k.created_at,
    revokedAt: k.revoked_at,
  };
}

interface CreateInput {
  type: KeyType;
  name: string;
  scopes: string[];
  workspaceId?: number;
  userId?: number;
  organizationId?: number;
  role?: (typeof ROLES)[number];
  createdBy?: number;
}

const CREATE = 'keys create';

/** The arguments of `keys create`, checked before the database is opened (exit code 2). */
export function parseCreate(argv: readonly string[]): { input: CreateInput; json: boolean } {
  const a = parseArgs(CREATE, argv, { values: ['type', 'name', 'workspace', 'user', 'org', 'role', 'scopes', 'created-by'] });
  const type = oneOf(CREATE, '--type', required(CREATE, a, 'type'), ['workspace', 'personal', 'partner'] as const);
  const name = required(CREATE, a, 'name').trim();
  if (name.length < 1 || name.length > 100) throw new UsageError(`${CREATE}: --name must be 1 to 100 characters`);
  const scopes = a.values.scopes === undefined ? [] : a.values.scopes.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = scopes.find((s) => !SCOPE.test(s));
  if (bad) throw new UsageError(`${CREATE}: --scopes: ${JSON.stringify(bad)} is not a scope (resource:action)`);
  if (scopes.length > MAX_SCOPES) throw new UsageError(`${CREATE}: --scopes: at most ${MAX_SCOPES}`);
  // Each type takes exactly the options that bind it (CONTRACT section 2: the secret's prefix says which).
  const allowed: Record<KeyType, string[]> = {
    workspace: ['workspace', 'role', 'scopes', 'created-by'],
    personal: ['user', 'scopes'],
    partner: ['org'],
  };
  const stray = ['workspace', 'user', 'org', 'role', 'scopes', 'created-by'].find((o) => a.values[o] !== undefined && !allowed[type].includes(o));
  if (stray) throw new UsageError(`${CREATE}: a ${type} key takes no --${stray}`);
  const input: CreateInput = { type, name, scopes };
  if (type === 'workspace') {
    input.workspaceId = idArg(CREATE, '--workspace', required(CREATE, a, 'workspace'));
    if (a.values.role !== undefined) input.role = oneOf(CREATE, '--role', a.values.role, ROLES);
    if (a.values['created-by'] !== undefined) input.createdBy = idArg(CREATE, '--created-by', a.values['created-by']);
  } else if (type === 'personal') {
    input.userId = idArg(CREATE, '--user', required(CREATE, a, 'user'));
  } else {
    input.organizationId = idArg(CREATE, '--org', required(CREATE, a, 'org'));
  }
  return { input, json: a.flags.has('json') };
}

export async function createKey(ctx: AdminContext, input: CreateInput) {
  const known = ctx.scopes();
  const unknown = input.scopes.find((s) => !(s in known));
  if (unknown) throw new UsageError(`${CREATE}: --scopes: unknown scope ${unknown} (not in ROUTES_FILE)`);
  let organizationId: number;
  let role: string | null = null;
  let createdBy: number | null = input.createdBy ?? null;
  if (input.type === 'workspace') {
    const ws = await ctx.db.query(`SELECT organization_id FROM workspaces WHERE id = $1 AND deleted_at IS NULL`, [input.workspaceId]);
    if (!ws.length) throw new CommandError(`${CREATE}: no workspace ${input.workspaceId}`);
    organizationId = ws[0].organization_id;
    role = input.role ?? 'ADMIN';
    if (createdBy !== null) {
      // The backend's rule for a key made by a member: capped by that member's role in the workspace.
      const m = await ctx.db.query(`SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2`, [input.workspaceId, createdBy]);
      if (!m.length) throw new CommandError(`${CREATE}: user ${createdBy} is not a member of workspace ${input.workspaceId}`);
      const creatorRole = m[0].role as string;
      if (input.role && roleRank(input.role) > roleRank(creatorRole)) {
        throw new CommandError(`${CREATE}: --role ${input.role} is above the ${creatorRole} role of user ${createdBy}`);
      }
      role = input.role ?? (roleRank('ADMIN') > roleRank(creatorRole) ? creatorRole : 'ADMIN');
    }
  } else if (input.type === 'personal') {
    const u = await ctx.db.query(`SELECT organization_id FROM users WHERE id = $1`, [input.userId]);
    if (!u.length) throw new CommandError(`${CREATE}: no user ${input.userId}`);
    organizationId = u[0].organization_id;
    createdBy = input.userId!;
  } else {
    const o = await ctx.db.query(`SELECT id FROM organizations WHERE id = $1`, [input.organizationId]);
    if (!o.length) throw new CommandError(`${CREATE}: no organization ${input.organizationId}`);
    organizationId = input.organizationId!;
  }
  const secret = generateSecret(input.type);
  const rows = await ctx.db.query(
    `INSERT INTO api_keys (organization_id, type, key_hash, hint, name, workspace_id, user_id, role, scopes, created_by)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) RETURNING *`,
    [organizationId, input.type, hashSecret(ctx.pepper, secret), hintOf(secret), input.name, input.workspaceId ?? null,
      input.userId ?? null, role, input.scopes, createdBy],
  );
  return { ...keyView(rows[0]), secret };
}

export async function keysCommand(ctx: () => Promise<AdminContext>, sub: string | undefined, argv: readonly string[]): Promise<void> {
  if (sub === 'create') {
    const { input, json } = parseCreate(argv);
    const key = await withContext(ctx, (c) => createKey(c, input));
    const where = key.type === 'workspace' ? `workspace ${key.workspaceId}, role ${key.role}` : key.type === 'personal' ? `user ${key.userId}` : `organization ${key.organizationId}`;
    output(json, key, [
      `Created ${key.type} key ${key.id} "${key.name}" (${where}${key.scopes.length ? `, scopes ${key.scopes.join(',')}` : ''}).`,
      `Secret, shown only this once (keygate keeps a keyed hash of it, never the secret):`,
      `  ${key.secret}`,
    ]);
    return;
  }
  if (sub === 'list') {
    const a = parseArgs('keys list', argv, { values: ['org', 'workspace', 'user'], flags: ['active'] });
    const where: string[] = [];
    const params: unknown[] = [];
    for (const [opt, column] of [['org', 'organization_id'], ['workspace', 'workspace_id'], ['user', 'user_id']] as const) {
      if (a.values[opt] === undefined) continue;
      params.push(idArg('keys list', `--${opt}`, a.values[opt]));
      where.push(`${column} = $${params.length}`);
    }
    if (a.flags.has('active')) where.push('revoked_at IS NULL');
    const rows = await withContext(ctx, (c) => c.db.query(`SELECT * FROM api_keys ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id`, params));
    const keys = rows.map(keyView);
    output(
      a.flags.has('json'),
      keys,
      table(
        ['id', 'type', 'name', 'hint', 'org', 'workspace', 'user', 'role', 'revoked', 'scopes'],
        keys.map((k) => [k.id, k.type, k.name, k.hint, k.organizationId, k.workspaceId, k.userId, k.role, k.revokedAt ? iso(k.revokedAt) : '', k.scopes.join(',')]),
      ),
    );
    return;
  }
  if (sub === 'revoke') {
    const a = parseArgs('keys revoke', argv, { positionals: ['keyId'] });
    const id = idArg('keys revoke', '<keyId>', a.positionals.keyId);
    const key = await withContext(ctx, async (c) => {
      const rows = await c.db.query(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *`, [id]);
      if (!rows.length) throw new CommandError(`keys revoke: no key ${id}`);
      // As DELETE /api-keys/{id}: the very next request on every gateway instance is refused.
      await c.accessChanged(rows[0].organization_id);
      return keyView(rows[0]);
    });
    output(a.flags.has('json'), key, [`Revoked ${key.type} key ${key.id} "${key.name}" (since ${iso(key.revokedAt)}).`]);
    return;
  }
  throw new UsageError(`keys: expected create, list or revoke${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
}
