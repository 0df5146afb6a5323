// Spans and instants as the commands take them: `24h`, `+30d`, `2026-12-31T23:59:59Z`. One reading of
// `<n><unit>` for every option that takes one (node has none); each option keeps its own bounds.
import { UsageError } from './args.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

/**
 * `<n><unit>` in milliseconds (`30s`, `90m`, `12h`, `7d`; n from 1 to 999999), or null when `raw` is
 * not one. `units` narrows the units taken.
 */
export function parseDuration(raw: string, units: readonly Unit[] = ['s', 'm', 'h', 'd']): number | null {
  const m = /^([1-9][0-9]{0,5})([smhd])$/.exec(raw);
  if (!m || !units.includes(m[2] as Unit)) return null;
  return Number(m[1]) * UNIT_MS[m[2] as Unit];
}

/**
 * An instant: ISO 8601 with a zone (`2026-12-31T23:59:59Z`, `...+02:00`), a date (`2026-12-31`, its
 * UTC midnight), or a span from now (`+30d`, `+12h`, `+90m`).
 */
export function parseInstant(command: string, option: string, raw: string, now = Date.now()): Date {
  const span = raw.startsWith('+') ? parseDuration(raw.slice(1)) : null;
  if (span !== null) return new Date(now + span);
  const ok =
    /^\d{4}-\d{2}-\d{2}$/.test(raw) ||
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(raw);
  const t = ok ? new Date(raw) : null;
  if (!t || Number.isNaN(t.getTime())) {
    throw new UsageError(
      `${command}: ${option} must be an ISO 8601 time with a zone (2026-12-31T23:59:59Z), a date (2026-12-31) or +<n>[smhd] (got ${JSON.stringify(raw)})`,
    );
  }
  return t;
}

/** A span: `0`, or `<n>s|m|h|d` (`24h`, `30m`, `7d`). */
export function parseSpan(command: string, option: string, raw: string): number {
  const ms = raw === '0' ? 0 : parseDuration(raw);
  if (ms === null)
    throw new UsageError(
      `${command}: ${option} must be 0 or <n>s, <n>m, <n>h or <n>d such as 24h (got ${JSON.stringify(raw)})`,
    );
  return ms;
}

/** `--ttl 30m`, `12h`, `7d` (at most a year). */
export function parseTtl(command: string, raw: string): number {
  const ms = parseDuration(raw, ['m', 'h', 'd']);
  if (ms === null || ms > 366 * UNIT_MS.d)
    throw new UsageError(
      `${command}: --ttl must be minutes, hours or days such as 30m, 12h or 7d, at most 366d (got ${JSON.stringify(raw)})`,
    );
  return ms;
}
