// The /v1 deliverability score's arithmetic (src/backend/accounts/v1-deliverability.ts), without a database.
import { describe, expect, it } from 'vitest';
import { deliverabilityOf } from '../../src/backend/accounts/v1-deliverability.js';

describe('deliverabilityOf', () => {
  it('totals over the ESPs asked for only, then each one, an ESP without messages at zero', () => {
    const rows = [
      { esp: 'gmail', sent: 10, inbox: 8, spam: 2 },
      { esp: 'outlook', sent: 5, inbox: 5, spam: 0 },
      { esp: 'other', sent: 100, inbox: 0, spam: 100 },
    ];
    const out = deliverabilityOf(rows, ['gmail', 'outlook', 'yahoo']);
    expect(Object.keys(out)).toEqual([
      'totalDeliverabilityRate',
      'totalSentCount',
      'totalInboxCount',
      'totalSpamInboxCount',
      'gmail',
      'outlook',
      'yahoo',
    ]);
    expect(out).toMatchObject({ totalSentCount: 15, totalInboxCount: 13, totalSpamInboxCount: 2 });
    expect(out.gmail).toMatchObject({ sentCount: 10, inboxCount: 8, spamCount: 2 });
    expect(out.yahoo).toMatchObject({ sentCount: 0, inboxCount: 0, spamCount: 0 });
    expect(out.other).toBeUndefined();
  });
});
