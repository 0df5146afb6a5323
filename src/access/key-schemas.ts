// The rules of a key's rotation and expiry as their interfaces accept them, written once: the admin API
// (src/admin-api/schemas.ts) and the backend's /api-keys (src/backend/api-keys/schemas.ts) both parse
// with these, each adding only the words its own API description gives them.
import { z } from 'zod';

/** How long a rotated key's replaced secret keeps working, in seconds: at most 30 days; 0 stops it at once. */
export const graceSeconds = z
  .number()
  .int()
  .min(0)
  .max(30 * 86_400);

/** The body of a rotation: `graceSeconds` when given (the service's default is a day). */
export const rotateKeyBody = z.object({ graceSeconds: graceSeconds.optional() }).strict();

/** An instant with its zone (RFC 3339): when a key expires. */
export const keyExpiry = z.iso.datetime({ offset: true });
