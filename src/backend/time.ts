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
  let f = fmtCache.get(tz);
  if (!f) {
    const make = (timeZone: string) =>
      new Intl.DateTimeFormat('en-US', {
        timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
        hour: '2-digit', minute: '2-digit', second: '2-digit', weekday: 'long',
      });
    try {
      f = make(tz);
    } catch {
      // A zone the runtime does not know (stored before validation, e.g. by a seed) reads as UTC
      // rather than failing every local-time computation of the mailbox.
      f = make('UTC');
    }
    fmtCache.set(tz, f);
  }
  return f;
}

export interface LocalParts {
  /** YYYY-MM-DD */
  date: string;
  /** 0 = monday ... 6 = sunday */
  day: number;
  /** minutes since local midnight */
  minute: number;
}

export function localParts(t: number, tz: string): LocalParts {
  const p = Object.fromEntries(fmt(tz).formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  return {
    date: `${p.year}-${p.month}-${p.day}`,
    day: DAYS.indexOf(p.weekday.toLowerCase() as Day),
    minute: Number(p.hour) * 60 + Number(p.minute),
  };
}

/** The zone's offset from UTC at instant t, in ms (local = utc + offset). */
function offsetAt(t: number, tz: string): number {
  const p = Object.fromEntries(fmt(tz).formatToParts(new Date(t)).map((x) => [x.type, x.value]));
  const asUtc = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return asUtc - (t - (t % 1000));
}

/**
 * The UTC instant of local `date` (YYYY-MM-DD) at `minute` in `tz`. A wall-clock time skipped by a
 * DST jump resolves to the instant after the jump; a repeated one to its first occurrence.
 */
export function zonedToUtc(date: string, minute: number, tz: string): number {
  const [y, m, d] = date.split('-').map(Number);
  const wall = Date.UTC(y, m - 1, d, Math.floor(minute / 60), minute % 60);
  let t = wall - offsetAt(wall, tz);
  const o2 = offsetAt(t, tz);
  if (wall - o2 !== t) {
    const t2 = wall - o2;
    // t2 maps back exactly unless the wall time falls in a DST gap: then take the later instant.
    t = offsetAt(t2, tz) === o2 ? t2 : Math.max(t, t2);
  }
  return t;
}

/** The calendar date `n` days after `date` (YYYY-MM-DD). */
export function addDays(date: string, n: number): string {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

/** Weekday (0 = monday) of a calendar date. */
export function weekdayOf(date: string): number {
  const [y, m, d] = date.split('-').map(Number);
  return (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7;
}

/** A strict YYYY-MM-DD that names a real date. */
export function isDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const t = Date.parse(`${s}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s;
}

/** Every date from `from` to `to` inclusive. */
export function dateRange(from: string, to: string): string[] {
  const out: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) out.push(d);
  return out;
}

/** Days between two dates (to - from). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}
