// Signing as the Standard Webhooks specification says (https://www.standardwebhooks.com/, "Signature
// scheme"): the secret is `whsec_` + base64 of random bytes; the signature is base64 of HMAC-SHA256, keyed
// with the decoded bytes, over `<webhook-id>.<webhook-timestamp>.<body>`, sent as `v1,<signature>`. Any
// Standard Webhooks library verifies it (docs/events.md, Verifying).
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** 32 random bytes: the HMAC-SHA256 key's full size. */
const SECRET_BYTES = 32;

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** What lists show of a secret: its prefix and first characters, never enough to sign with. */
export function secretHint(secret: string): string {
  return secret.slice(0, SECRET_PREFIX.length + 4) + '…';
}

export function signature(secret: string, messageId: string, timestampS: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampS}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of one attempt. */
export function webhookHeaders(secret: string, messageId: string, timestampS: number, body: string) {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': signature(secret, messageId, timestampS, body),
  };
}
