// The events' settings (docs/events.md, Settings): their defaults, and a bad value refused at start with
// one line naming the setting, as every setting is (src/config/settings.ts).
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/config/settings.js';

describe('events settings', () => {
  it('default to delivery on, 10 s, 8 at once, 7 days, 80 and 100 %, a minute, 90 days', () => {
    expect(loadSettings({})).toMatchObject({
      WEBHOOKS_DELIVERY: 'on',
      WEBHOOKS_TIMEOUT_MS: 10_000,
      WEBHOOKS_CONCURRENCY: 8,
      WEBHOOKS_POLL_MS: 1_000,
      EVENTS_KEY_EXPIRING_DAYS: 7,
      EVENTS_QUOTA_THRESHOLDS: [80, 100],
      EVENTS_SCAN_MS: 60_000,
      EVENTS_RETENTION_DAYS: 90,
    });
    expect(loadSettings({ EVENTS_QUOTA_THRESHOLDS: '50, 90,100', WEBHOOKS_DELIVERY: 'off' })).toMatchObject({
      EVENTS_QUOTA_THRESHOLDS: [50, 90, 100],
      WEBHOOKS_DELIVERY: 'off',
    });
  });

  it.each([
    [{ WEBHOOKS_DELIVERY: 'maybe' }, /^setting WEBHOOKS_DELIVERY: /],
    [{ WEBHOOKS_TIMEOUT_MS: '50' }, /^setting WEBHOOKS_TIMEOUT_MS: /],
    [{ WEBHOOKS_CONCURRENCY: '0' }, /^setting WEBHOOKS_CONCURRENCY: /],
    [
      { EVENTS_QUOTA_THRESHOLDS: '80,eighty' },
      /^setting EVENTS_QUOTA_THRESHOLDS\.1: each must be a percentage from 1 to 1000/,
    ],
    [{ EVENTS_QUOTA_THRESHOLDS: '0' }, /^setting EVENTS_QUOTA_THRESHOLDS\.0: /],
    [{ EVENTS_KEY_EXPIRING_DAYS: '0' }, /^setting EVENTS_KEY_EXPIRING_DAYS: /],
    [{ EVENTS_RETENTION_DAYS: '30' }, /^setting EVENTS_RETENTION_DAYS: /],
  ])('refuses %o', (env, message) => {
    expect(() => loadSettings(env)).toThrowError(message);
  });
});
