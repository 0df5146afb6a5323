// Warmup activity: one item per warmup message the mailbox sent (spec, "Warmup activity item").
import { z } from 'zod';
import type { Queryable } from '../../db/index.js';
import { pagination } from '../router.js';
import { countWarmupMessages, warmupMessagesPage } from './queries.js';

const GOOGLE_FAMILY = new Set([
  'google',
  'gmail',
  'gsuite',
  'g-suite',
  'googlemail',
  'google-workspace',
  'googleworkspace',
]);
const MICROSOFT_FAMILY = new Set([
  'microsoft',
  'outlook',
  'hotmail',
  'live',
  'msn',
  'office365',
  'office-365',
  'o365',
  'microsoft365',
  'microsoft-365',
  'exchange',
  'exchange-online',
]);

/**
 * `senderEsp`: `google` for the Google family, `microsoft` for the Microsoft family, `other` for plain
 * SMTP, otherwise the lower-cased brand of the provider.
 */
export function senderEspOf(provider: string): string {
  const normalized = provider.trim().toLowerCase();
  if (GOOGLE_FAMILY.has(normalized)) return 'google';
  if (MICROSOFT_FAMILY.has(normalized)) return 'microsoft';
  if (normalized === 'smtp' || normalized === 'imap' || normalized === '') return 'other';
  return normalized;
}

/** `provider` of activity items: deprecated 2026-09-28, removed 2026-12-27 (spec, Versioning rule 7). */
export const PROVIDER_DEPRECATED_AT = Date.UTC(2026, 8, 28);
export const PROVIDER_SUNSET_AT = Date.UTC(2026, 11, 27);

/**
 * RFC 9745 `Deprecation` is a structured-field date (`@` + Unix seconds) of when the deprecation took
 * effect; RFC 8594 `Sunset` is an HTTP-date of the removal.
 */
export const DEPRECATION_HEADERS: Record<string, string> = {
  Deprecation: `@${PROVIDER_DEPRECATED_AT / 1000}`,
  Sunset: new Date(PROVIDER_SUNSET_AT).toUTCString(),
};

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,9}$/, 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const activityQuerySchema = z
  .object({
    page: int(1, 1_000_000).default(1),
    per_page: int(1, 100).default(50),
  })
  .strict();

export async function listActivity(db: Queryable, accountId: number, provider: string, page: number, perPage: number) {
  const total = await countWarmupMessages(db, accountId);
  const rows = await warmupMessagesPage(db, accountId, perPage, (page - 1) * perPage);
  const esp = senderEspOf(provider);
  return {
    data: rows.map((row) => ({
      id: Number(row.id),
      accountId,
      sentAt: new Date(row.sent_at).toISOString(),
      senderEsp: esp,
      provider: esp,
      recipientEsp: row.recipient_esp,
      outcome: row.outcome,
      replied: row.replied,
    })),
    pagination: pagination(page, perPage, total),
  };
}
