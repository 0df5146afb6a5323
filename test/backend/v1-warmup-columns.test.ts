// The /v1 warmup PATCH's columns (src/backend/warmup/v1-routes.ts), without a database: what is written
// to the shared accounts row and to the /v1-only settings for a given body.
import { describe, expect, it } from 'vitest';
import { sharedColumnsOf, v1ColumnsOf } from '../../src/backend/warmup/v1-routes.js';

describe('sharedColumnsOf', () => {
  it('a max of 5 or more is the shared max, the current limit stays under it, a pending lower max is dropped', () => {
    expect(sharedColumnsOf({ maxSendingLimit: 30 }, 40)).toEqual({
      warmup_max_limit: 30,
      warmup_current_limit: 30,
      pending_max_limit: null,
      pending_effective_at: null,
    });
    expect(sharedColumnsOf({ maxSendingLimit: 30 }, 12)).toMatchObject({
      warmup_max_limit: 30,
      warmup_current_limit: 12,
    });
  });

  it('a max under the /v2 floor of 5 sets the shared columns to the floor', () => {
    expect(sharedColumnsOf({ maxSendingLimit: 2 }, 20)).toMatchObject({ warmup_max_limit: 5, warmup_current_limit: 5 });
    expect(sharedColumnsOf({ maxSendingLimit: 0 }, 3)).toMatchObject({ warmup_max_limit: 5, warmup_current_limit: 5 });
  });

  it('writes only what the body sends', () => {
    expect(sharedColumnsOf({ replyRate: 20, timeZone: 'Europe/Paris' }, 20)).toEqual({
      reply_rate_custom: 20,
      time_zone: 'Europe/Paris',
    });
    expect(sharedColumnsOf({ strategy: 'flat' }, 20)).toEqual({});
  });
});

describe('v1ColumnsOf', () => {
  it('keeps a max under the floor in max_below_floor, and clears it for a max at or over the floor', () => {
    expect(v1ColumnsOf({ maxSendingLimit: 3 })).toEqual({ max_below_floor: 3 });
    expect(v1ColumnsOf({ maxSendingLimit: 5 })).toEqual({ max_below_floor: null });
  });

  it('maps each /v1 setting to its column, the three volumes together', () => {
    expect(
      v1ColumnsOf({
        strategy: 'flat',
        warmUpInitialSendingLimit: 10,
        increaseEmailsByNumber: 0,
        warmupLanguage: 'English',
        upcomingContentConfig: { industry: 'retail', topics: ['shoes'] },
        googleVolume: 50,
        microsoftVolume: 30,
        othersVolume: 20,
      }),
    ).toEqual({
      strategy: 'flat',
      initial_limit: 10,
      increase_by: 0,
      language: 'English',
      content_industry: 'retail',
      content_topics: ['shoes'],
      google_volume: 50,
      microsoft_volume: 30,
      others_volume: 20,
    });
    expect(v1ColumnsOf({ replyRate: 10, timeZone: 'UTC' })).toEqual({});
  });
});
