// Timestamp columns as the interfaces write them.

/** A timestamp column as ISO 8601 text, or null for NULL (`pg` hands a Date; PGlite a Date or text). */
export const isoOrNull = (t: Date | string | null | undefined): string | null =>
  t == null ? null : new Date(t).toISOString();
