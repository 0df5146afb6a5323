// Step 1 of docs/decisions.md section 3: only canonical paths are authorized, so the path the gateway
// authorizes is byte for byte the path the upstream routes (no parser differential).
import { CANONICAL_ID } from '../config/contract.js';

const ENCODED_SLASH = /%(2f|5c)/i;

/** Returns null when the path is canonical, else the reason. `path` excludes the query string. */
export function pathProblem(path: string): string | null {
  if (path.length === 0 || path[0] !== '/') return 'the path must start with /';
  if (path.length > 2048) return 'the path is too long';
  if (path.includes('\\') || ENCODED_SLASH.test(path)) return 'encoded or backward slashes are not allowed in the path';
  const segs = path.split('/');
  for (let i = 1; i < segs.length; i++) {
    const seg = segs[i];
    if (seg === '') return 'empty path segments (// or a trailing /) are not allowed';
    let decoded: string;
    try {
      decoded = decodeURIComponent(seg);
    } catch {
      return 'malformed percent-encoding in the path';
    }
    if (decoded === '.' || decoded === '..') return 'dot segments are not allowed in the path';
    if (/[\x00-\x1f\x7f]/.test(decoded)) return 'control characters are not allowed in the path';
    const c = seg.charCodeAt(0);
    // A segment that starts like a number must be a canonical id: no 01, 1e3, -1, +1 or 17+ digits.
    if ((c >= 48 && c <= 57) || c === 45 || c === 43) {
      if (!CANONICAL_ID.test(seg)) return `path segment ${JSON.stringify(seg.slice(0, 40))} is not a canonical id`;
    }
  }
  return null;
}
