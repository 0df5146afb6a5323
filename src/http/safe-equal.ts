// Comparing secrets (signatures, tokens) in constant time, for both programs.
import { timingSafeEqual } from 'node:crypto';

/** Equal strings, compared in time that does not depend on where they first differ. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
