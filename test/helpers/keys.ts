// Secrets of the tests' own keys: a type's prefix and a tag a reader can tell apart, padded to a valid
// secret (32 to 128 characters of [A-Za-z0-9] after the prefix, src/access/secrets.ts).

import type { Queryable } from '../../src/db/types.js';
import { getPepper } from '../../src/access/pepper.js';
import { hashSecret } from '../../src/access/secrets.js';

export type KeyPrefix = 'svc_ws_' | 'svc_pk_' | 'svc_v1_';

/** `prefix` + `tag` padded with zeros to 36 characters: `testSecret('svc_ws_', 'Doomed')`. */
export function testSecret(prefix: KeyPrefix, tag: string): string {
  return prefix + tag.padEnd(36, '0');
}

/**
 * A consumer of a rest profile (an organization without workspaces) and one key of it with `prefix`,
 * written straight into the tables: for tests of the gateway alone, without the service layer.
 */
export async function insertConsumerKey(
  db: Queryable,
  o: { tag: string; plan: string; scopes: string[]; prefix?: string; type?: string },
): Promise<{ secret: string; organizationId: number }> {
  const secret = (o.prefix ?? 'shop_') + o.tag.padEnd(40, '0');
  const [org] = await db.query<{ id: number }>(`INSERT INTO organizations (name, plan) VALUES ($1, $2) RETURNING id`, [
    `consumer ${o.tag}`,
    o.plan,
  ]);
  const pepper = await getPepper(db);
  await db.query(
    `INSERT INTO api_keys (organization_id, type, key_hash, hint, name, scopes) VALUES ($1, $2, $3, $4, $5, $6)`,
    [org.id, o.type ?? 'consumer', hashSecret(pepper, secret), secret.slice(0, 11), o.tag, o.scopes],
  );
  return { secret, organizationId: org.id };
}
