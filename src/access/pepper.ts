import type { Queryable } from '../db/types.js';

/** The per-database pepper of the keyed hash of secrets (made by migration 001). */
export async function getPepper(q: Queryable): Promise<string> {
  const rows = await q.query<{ value: string }>(`SELECT value FROM settings WHERE key = 'key_hash_pepper'`);
  if (!rows.length) throw new Error('database not migrated: no key_hash_pepper');
  return rows[0].value;
}
