// What PostgreSQL can store, checked before any query: a value the database cannot hold must come back
// as 400 invalid_request naming its field, never reach the driver and come back as a 500 (README, "Ids").
import { z } from 'zod';

/** The top of PostgreSQL's `integer`: every id column and every stored count or limit is one. */
export const PG_INT_MAX = 2_147_483_647;

/** An integer a PostgreSQL `integer` column holds, within [min, max]. */
export const pgInt = (min: number, max = PG_INT_MAX) =>
  z.number().int().min(min).max(Math.min(max, PG_INT_MAX), `must be at most ${Math.min(max, PG_INT_MAX)}`);

/** An id sent in a body: a positive integer within PostgreSQL's `integer`. */
export const pgId = z.number().int().positive().max(PG_INT_MAX, `must be an id from 1 to ${PG_INT_MAX}`);

/**
 * PostgreSQL text (and jsonb) cannot hold NUL (SQLSTATE 22021, 22P05), and a UTF-16 surrogate
 * without its pair has no UTF-8 form at all (the driver would store U+FFFD in its place).
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/**
 * The first place in a parsed body or query object that holds a string (value or field name) PostgreSQL
 * cannot store, as a zod-style path (`tags.1`, `smtp.host`), or null. Every string of the request is
 * checked, whatever the route's schema makes of it. Iterative, with the path built only for the culprit,
 * so a deeply nested body can neither overflow the stack nor cost quadratic time.
 */
export function unstorableTextAt(value: unknown): { field: string; inName: boolean } | null {
  interface Node { v: unknown; key: string; parent: Node | null }
  const pathOf = (n: Node | null, last?: string) => {
    const keys = last === undefined ? [] : [last];
    for (let p = n; p && p.parent; p = p.parent) keys.push(p.key);
    return keys.reverse().join('.');
  };
  const stack: Node[] = [{ v: value, key: '', parent: null }];
  while (stack.length) {
    const n = stack.pop()!;
    const v = n.v;
    if (typeof v === 'string') {
      if (!isStorableText(v)) return { field: pathOf(n), inName: false };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], key: String(i), parent: n });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (const k of keys) if (!isStorableText(k)) return { field: pathOf(n, k), inName: true };
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]], key: keys[i], parent: n });
    }
  }
  return null;
}
