// The /v1 report export's CSV (src/backend/analytics/v1-routes.ts), without a database.
import { describe, expect, it } from 'vitest';
import { reportCsv, type ReportDay } from '../../src/backend/analytics/v1-routes.js';

const day = (date: string, sent: number): ReportDay => ({
  date,
  sent,
  inbox: sent,
  received: sent,
  spam: 0,
  other: 0,
  undelivered: 0,
  replied: 1,
  deliverabilityRate: 100,
});

describe('reportCsv', () => {
  it('a header, then a line per account and day, in the order given; every line ends in CRLF', () => {
    const csv = reportCsv(
      [
        { id: 7, email_address: 'a@x.test' },
        { id: 3, email_address: 'b@x.test' },
      ],
      new Map([
        [7, [day('2026-11-01', 4), day('2026-11-02', 5)]],
        [3, [day('2026-11-01', 0)]],
      ]),
    );
    expect(csv.split('\r\n')).toEqual([
      'emailAccountId,fromEmail,date,sent,inbox,received,spam,other,undelivered,replied,deliverabilityRate',
      '7,a@x.test,2026-11-01,4,4,4,0,0,0,1,100',
      '7,a@x.test,2026-11-02,5,5,5,0,0,0,1,100',
      '3,b@x.test,2026-11-01,0,0,0,0,0,0,1,100',
      '',
    ]);
  });

  it('quotes a field holding a comma, a quote or a line break, doubling its quotes', () => {
    const csv = reportCsv([{ id: 1, email_address: '"odd, name"@x.test' }], new Map([[1, [day('2026-11-01', 1)]]]));
    expect(csv.split('\r\n')[1]).toBe('1,"""odd, name""@x.test",2026-11-01,1,1,1,0,0,0,1,100');
  });

  it('no account: the header alone', () => {
    expect(reportCsv([], new Map())).toBe(
      'emailAccountId,fromEmail,date,sent,inbox,received,spam,other,undelivered,replied,deliverabilityRate\r\n',
    );
  });
});
