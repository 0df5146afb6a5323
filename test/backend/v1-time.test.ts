// The wall-clock helpers behind /v1 local days and pending-send rescheduling.
import { describe, expect, it } from 'vitest';
import {
  addDays,
  dateRange,
  daysBetween,
  isDate,
  isTimeZone,
  localParts,
  weekdayOf,
  zonedToUtc,
} from '../../src/backend/time.js';

const iso = (t: number) => new Date(t).toISOString();

describe('v1 time helpers', () => {
  it('maps a local date and minute to its UTC instant, DST included', () => {
    expect(iso(zonedToUtc('2027-01-04', 600, 'America/New_York'))).toBe('2027-01-04T15:00:00.000Z');
    expect(iso(zonedToUtc('2027-07-05', 600, 'America/New_York'))).toBe('2027-07-05T14:00:00.000Z');
    expect(iso(zonedToUtc('2027-01-04', 600, 'Asia/Kolkata'))).toBe('2027-01-04T04:30:00.000Z');
    expect(iso(zonedToUtc('2027-01-04', 0, 'Pacific/Kiritimati'))).toBe('2027-01-03T10:00:00.000Z');
    // 02:30 does not exist on 2027-03-14 in New York: the instant after the jump (03:30 EDT).
    expect(iso(zonedToUtc('2027-03-14', 150, 'America/New_York'))).toBe('2027-03-14T07:30:00.000Z');
    // 01:30 happens twice on 2027-11-07: the first (EDT).
    expect(iso(zonedToUtc('2027-11-07', 90, 'America/New_York'))).toBe('2027-11-07T05:30:00.000Z');
  });

  it('reads the local date, weekday and minute of an instant', () => {
    expect(localParts(Date.UTC(2027, 0, 4, 12, 0), 'Pacific/Kiritimati')).toEqual({
      date: '2027-01-05',
      day: 1,
      minute: 120,
    });
    expect(localParts(Date.UTC(2027, 0, 4, 12, 0), 'UTC')).toEqual({ date: '2027-01-04', day: 0, minute: 720 });
  });

  it('accepts IANA names as spelled, links included, and refuses the rest', () => {
    for (const tz of [
      'UTC',
      'Europe/Paris',
      'Asia/Kolkata',
      'Asia/Calcutta',
      'Europe/Kyiv',
      'America/Argentina/Buenos_Aires',
      'Etc/GMT+5',
    ])
      expect(isTimeZone(tz), tz).toBe(true);
    for (const tz of ['utc', 'europe/paris', 'Mars/Olympus', '+05:30', '', 'Europe/Paris/'])
      expect(isTimeZone(tz), tz).toBe(false);
  });

  it('does calendar arithmetic on YYYY-MM-DD', () => {
    expect(addDays('2027-02-28', 1)).toBe('2027-03-01');
    expect(weekdayOf('2027-01-04')).toBe(0);
    expect(weekdayOf('2027-01-10')).toBe(6);
    expect(dateRange('2027-12-30', '2028-01-02')).toEqual(['2027-12-30', '2027-12-31', '2028-01-01', '2028-01-02']);
    expect(daysBetween('2027-01-01', '2028-01-01')).toBe(365);
    expect([isDate('2027-02-29'), isDate('2028-02-29'), isDate('2027-1-01'), isDate('2027-13-01')]).toEqual([
      false,
      true,
      false,
      false,
    ]);
  });
});
