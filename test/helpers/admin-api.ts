// The admin API as the tests reach it: an operator's token made through the service layer (as the CLI
// makes one), and a request to the API with a bearer token from a given client address.
import { createAdminToken } from '../../src/access/service/admin-tokens.js';
import { getPepper } from '../../src/access/pepper.js';
import { systemClock, type Clock } from '../../src/ops/clock.js';
import { fetchRes, type Res, type Stack } from './stack.js';

/** A new admin token of `role`, made by a CLI actor; its id and its secret (shown once). */
export async function adminToken(
  stack: Stack,
  role: 'read' | 'write',
  name: string,
  clock: Clock = systemClock,
): Promise<{ id: number; token: string }> {
  const ctx = {
    db: stack.db,
    pepper: await getPepper(stack.db),
    clock,
    actor: { kind: 'cli' as const, osUser: 'test' },
  };
  const t = await createAdminToken(ctx, { name, role });
  return { id: t.id, token: t.token };
}

/** One admin API request: JSON body when given, `Authorization: Bearer <token>` when given. */
export function adminCall(
  base: string,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; ip?: string } = {},
): Promise<Res> {
  const headers: Record<string, string> = { 'x-forwarded-for': o.ip ?? '198.51.100.1' };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  return fetchRes(base + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
}
