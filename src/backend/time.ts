// Wall-clock arithmetic in IANA time zones with Intl only (no tz library): the account's local day,
// and the UTC instant of a local date and minute.

export const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;
export type Day = (typeof DAYS)[number];

let zones: Set<string> | null = null;
/** The runtime's IANA list plus 'UTC' (which the list omits). */
export function timeZones(): Set<string> {
  zones ??= new Set([...Intl.supportedValuesOf('timeZone'), 'UTC']);
  return zones;
}

const IANA_SHAPE = /^[A-Z][A-Za-z0-9_+-]*(\/[A-Z0-9][A-Za-z0-9_+-]*)*$/;
/**
 * An accepted timeZone name: one of timeZones(), or another IANA name (a link) the runtime resolves.
 * ICU's list carries legacy canonical ids (Asia/Calcutta, Europe/Kiev) and omits current ones
 * (Asia/Kolkata, Europe/Kyiv) that the spec's 551 accepted names include; names must be spelled
 * as IANA does (case-sensitive), so `utc` or `asia/kolkata` are refused even though Intl takes them.
 */
export function isTimeZone(name: string): boolean {
  if (timeZones().has(name)) return true;
  if (!IANA_SHAPE.test(name) || name.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const fmtCache = new Map<string, Intl.DateTimeFormat>();
function fmt(tz: string): Intl.DateTimeFormat {
  let formatter = fmtCache.get(tz);
  if (!formatter) {
    const make = (timeZone: string) =>
      new Intl.DateTimeFormat('en-US', {
        timeZone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        weekday: 'long',
      });
    try {
      formatter = make(tz);
    } catch {
      // A zone the runtime does not know (stored before validation, e.g. by a seed) reads as UTC
      // rather than failing every local-time computation of the mailbox.
      formatter = make('UTC');
    }
    fmtCache.set(tz, formatter);
  }
  return formatter;
}

export interface LocalParts {
  /** YYYY-MM-DD */
  date: string;
  /** 0 = monday ... 6 = sunday */
  day: number;
  /** minutes since local midnight */
  minute: number;
}

export function localParts(instant: number, tz: string): LocalParts {
  const parts = Object.fromEntries(
    fmt(tz)
      .formatToParts(new Date(instant))
      .map((x) => [x.type, x.value]),
  );
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    day: DAYS.indexOf(parts.weekday.toLowerCase() as Day),
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

/** The zone's offset from UTC at instant t, in ms (local = utc + offset). */
function offsetAt(instant: number, tz: string): number {
  const parts = Object.fromEntries(
    fmt(tz)
      .formatToParts(new Date(instant))
      .map((x) => [x.type, x.value]),
  );
  const asUtc = Date.UTC(
    Number(parts.year),
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  return asUtc - (instant - (instant % 1000));
}

/**
 * The UTC instant of local `date` (YYYY-MM-DD) at `minute` in `tz`. A wall-clock time skipped by a
 * DST jump resolves to the instant after the jump; a repeated one to its first occurrence.
 */
export function zonedToUtc(date: string, minute: number, tz: string): number {
  const [year, month, dayOfMonth] = date.split('-').map(Number);
  const wall = Date.UTC(year, month - 1, dayOfMonth, Math.floor(minute / 60), minute % 60);
  let instant = wall - offsetAt(wall, tz);
  const o2 = offsetAt(instant, tz);
  if (wall - o2 !== instant) {
    const t2 = wall - o2;
    // t2 maps back exactly unless the wall time falls in a DST gap: then take the later instant.
    instant = offsetAt(t2, tz) === o2 ? t2 : Math.max(instant, t2);
  }
  return instant;
}

/** The calendar date `days` days after `date` (YYYY-MM-DD). */
export function addDays(date: string, days: number): string {
  const [year, month, dayOfMonth] = date.split('-').map(Number);
  return new Date(Date.UTC(year, month - 1, dayOfMonth + days)).toISOString().slice(0, 10);
}

/** Weekday (0 = monday) of a calendar date. */
export function weekdayOf(date: string): number {
  const [year, month, dayOfMonth] = date.split('-').map(Number);
  return (new Date(Date.UTC(year, month - 1, dayOfMonth)).getUTCDay() + 6) % 7;
}

/** A strict YYYY-MM-DD that names a real date. */
export function isDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const instant = Date.parse(`${text}T00:00:00Z`);
  return !Number.isNaN(instant) && new Date(instant).toISOString().slice(0, 10) === text;
}

/** Every date from `from` to `to` inclusive. */
export function dateRange(from: string, to: string): string[] {
  const out: string[] = [];
  for (let date = from; date <= to; date = addDays(date, 1)) out.push(date);
  return out;
}

/** Days between two dates (to - from). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}
