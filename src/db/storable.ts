// What PostgreSQL can store, checked before any query: a value the database cannot hold must come back
// as 400 invalid_request naming its field, never reach the driver and come back as a 500 (docs/workspace-api.md, "Ids").
import { z } from 'zod';
import { PG_INT_MAX } from '../config/contract.js';

/** An integer a PostgreSQL `integer` column holds, within [min, max]. */
export const pgInt = (min: number, max = PG_INT_MAX) =>
  z
    .number()
    .int()
    .min(min)
    .max(Math.min(max, PG_INT_MAX), `must be at most ${Math.min(max, PG_INT_MAX)}`);

/** An id sent in a body: a positive integer within PostgreSQL's `integer`. */
export const pgId = z.number().int().positive().max(PG_INT_MAX, `must be an id from 1 to ${PG_INT_MAX}`);

/**
 * PostgreSQL text (and jsonb) cannot hold NUL (SQLSTATE 22021, 22P05), and a UTF-16 surrogate
 * without its pair has no UTF-8 form at all (the driver would store U+FFFD in its place).
 */
// NUL is the very character looked for here (PostgreSQL text cannot hold it).

const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/**
 * The first place in a parsed body or query object that holds a string (value or field name) PostgreSQL
 * cannot store, as a zod-style path (`tags.1`, `smtp.host`), or null. Every string of the request is
 * checked, whatever the route's schema makes of it. Iterative, with the path built only for the culprit,
 * so a deeply nested body can neither overflow the stack nor cost quadratic time.
 */
export function unstorableTextAt(value: unknown): { field: string; inName: boolean } | null {
  interface Node {
    v: unknown;
    key: string;
    parent: Node | null;
  }
  const pathOf = (node: Node | null, last?: string) => {
    const keys = last === undefined ? [] : [last];
    for (let ancestor = node; ancestor && ancestor.parent; ancestor = ancestor.parent) keys.push(ancestor.key);
    return keys.reverse().join('.');
  };
  const stack: Node[] = [{ v: value, key: '', parent: null }];
  while (stack.length) {
    const node = stack.pop()!;
    const nodeValue = node.v;
    if (typeof nodeValue === 'string') {
      if (!isStorableText(nodeValue)) return { field: pathOf(node), inName: false };
    } else if (Array.isArray(nodeValue)) {
      for (let index = nodeValue.length - 1; index >= 0; index--)
        stack.push({ v: nodeValue[index], key: String(index), parent: node });
    } else if (nodeValue !== null && typeof nodeValue === 'object') {
      const keys = Object.keys(nodeValue);
      for (const key of keys) if (!isStorableText(key)) return { field: pathOf(node, key), inName: true };
      for (let index = keys.length - 1; index >= 0; index--)
        stack.push({ v: (nodeValue as Record<string, unknown>)[keys[index]], key: keys[index], parent: node });
    }
  }
  return null;
}
