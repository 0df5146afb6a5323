// The usage history through the admin API: a key's and an organization's history with a read token,
// bad from, to and granularity refused with 400 in the API's one error shape, keys and organizations not
// there 404; the billing export as CSV (names with commas, quotes and line breaks quoted as RFC 4180
// says, a formula never left for a spreadsheet to run) and as JSON lines, with its content type and
// file name, streamed in pages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack, type Res } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';
import { ensureUsageTables, insertAnswers } from '../access/usage-history-rows.js';
import { csvField, EXPORT_COLUMNS } from '../../src/access/service/usage-history.js';

// 2026-11-22T12:30:10Z
const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 30, 10));
let stack: Stack;
let token = '';

const call = (path: string, method = 'GET'): Promise<Res> =>
  adminCall(stack.app.adminApiUrl!, method, path, { token, ip: '198.51.100.7' });

beforeAll(async () => {
  stack = await startStack({ clock, env: { ADMIN_API_PORT: '0' } });
  token = (await adminToken(stack, 'read', 'usage-reader', clock)).token;
  await ensureUsageTables(stack.db);
  await insertAnswers(stack.db, [
    { at: '2026-11-22T12:10Z', org: 1, key: 1000, outcome: 'forwarded_2xx', count: 4 },
    { at: '2026-11-22T12:15Z', org: 1, key: 1000, outcome: 'refused_150003', count: 2 },
    { at: '2026-11-22T09:00Z', org: 1, key: 1001, outcome: 'limited_key', count: 3 },
    { at: '2026-11-03T08:00Z', org: 2, key: 2000, outcome: 'forwarded_4xx', count: 11 },
  ]);
});
afterAll(() => stack?.close());

function expectRefusal(r: Res, status: number, code: string, message: RegExp) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(r.body).toEqual({ error: { code, message: expect.stringMatching(message), requestId: expect.any(String) } });
}

describe('GET .../usage/history', () => {
  it("a key's last 24 hours by hour, zero-filled, with a read token", async () => {
    const r = await call('/api/keys/1000/usage/history');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      keyId: 1000,
      organizationId: 1,
      granularity: 'hour',
      from: '2026-11-21T13:00:00.000Z',
      to: '2026-11-22T13:00:00.000Z',
      totals: { admitted: 4, refused: 2 },
    });
    expect(r.body.buckets).toHaveLength(24);
    expect(r.body.buckets[23]).toMatchObject({ start: '2026-11-22T12:00:00.000Z', admitted: 4, refused: 2 });
    expect(r.body.buckets[23].outcomes).toMatchObject({ forwarded_2xx: 4, refused_150003: 2, limited_key: 0 });
  });

  it("an organization's, by minute and by day, over from and to", async () => {
    const minutes = await call(
      '/api/organizations/1/usage/history?granularity=minute&from=2026-11-22T12:09:00Z&to=2026-11-22T12:11:00%2B00:00',
    );
    expect(minutes.status, minutes.text).toBe(200);
    expect(minutes.body.buckets.map((b: { admitted: number }) => b.admitted)).toEqual([0, 4]);
    const days = await call('/api/organizations/1/usage/history?granularity=day&from=2026-11-20T00:00:00Z');
    expect(days.body.buckets.map((b: { start: string; refused: number }) => [b.start.slice(0, 10), b.refused])).toEqual(
      [
        ['2026-11-20', 0],
        ['2026-11-21', 0],
        ['2026-11-22', 5],
      ],
    );
  });

  it('bad from, to or granularity: 400 invalid_request naming what to change', async () => {
    const cases: [string, RegExp][] = [
      ['from=2026-11-22', /^from must be an ISO 8601 instant with a zone/],
      ['from=2026-11-22T00:00:00', /^from must be an ISO 8601 instant with a zone/],
      ['to=yesterday', /^to must be an ISO 8601 instant with a zone/],
      ['to=2026-13-01T00:00:00Z', /^to must be an ISO 8601 instant/],
      ['granularity=week', /^granularity must be one of minute, hour, day$/],
      ['from=2026-11-22T12:00:00Z&to=2026-11-22T11:00:00Z', /^from must be before to$/],
      ['granularity=minute&from=2026-11-20T00:00:00Z', /^a history by minute holds at most 1440 buckets/],
      ['granularity=day&from=2020-01-01T00:00:00Z', /at most 400 buckets/],
    ];
    for (const [q, message] of cases) {
      expectRefusal(await call(`/api/keys/1000/usage/history?${q}`), 400, 'invalid_request', message);
      expectRefusal(await call(`/api/organizations/1/usage/history?${q}`), 400, 'invalid_request', message);
    }
  });

  it('a key or organization not there: 404 not_found', async () => {
    expectRefusal(await call('/api/keys/999999/usage/history'), 404, 'not_found', /^no key 999999$/);
    expectRefusal(await call('/api/organizations/999999/usage/history'), 404, 'not_found', /^no organization 999999$/);
    expectRefusal(await call('/api/keys/2147483648/usage/history'), 404, 'not_found', /no such/);
  });
});

/** RFC 4180 as a reader takes it: fields, quoted ones with their doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const endField = () => {
    row.push(field);
    field = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      field += '"';
      i++;
    } else if (quoted && c === '"') quoted = false;
    else if (quoted) field += c;
    else if (c === '"') quoted = true;
    else if (c === ',') endField();
    else if (c === '\r' && text[i + 1] === '\n') {
      endField();
      rows.push(row);
      row = [];
      i++;
    } else field += c;
  }
  expect(field).toBe('');
  return rows;
}

describe('GET /api/usage/export', () => {
  it('CSV: the header, a row per key, names with commas, quotes and line breaks quoted; a download with a file name', async () => {
    await stack.db.query(`UPDATE organizations SET name = $1 WHERE id = 1`, ['Acme, "the" Inc.\nEurope']);
    await stack.db.query(`UPDATE api_keys SET name = $1 WHERE id = 1001`, ['=HYPERLINK("x")']);
    const r = await call('/api/usage/export?month=2026-11');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="keygate-usage-2026-11.csv"');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.text.endsWith('\r\n')).toBe(true);
    const rows = parseCsv(r.text);
    expect(rows[0]).toEqual([...EXPORT_COLUMNS]);
    expect(rows.slice(1).map((row) => Object.fromEntries(EXPORT_COLUMNS.map((c, i) => [c, row[i]])))).toEqual([
      expect.objectContaining({
        month: '2026-11',
        organization_id: '1',
        organization_name: 'Acme, "the" Inc.\nEurope',
        key_id: '1000',
        key_name: 'ws admin',
        key_hint: 'svc_ws_WsAd…',
        admitted: '4',
        refused: '2',
        forwarded_2xx: '4',
        refused_authorization: '2',
      }),
      expect.objectContaining({ key_id: '1001', key_name: `'=HYPERLINK("x")`, refused: '3', limited_key: '3' }),
      expect.objectContaining({ organization_id: '2', key_id: '2000', forwarded_4xx: '11', organization_name: 'Beta' }),
    ]);
    for (const row of rows) expect(row).toHaveLength(EXPORT_COLUMNS.length);
  });

  it("JSON lines of one organization's month; an empty month is the header alone or nothing", async () => {
    const r = await call('/api/usage/export?month=2026-11&organization=2&format=jsonl');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(r.headers.get('content-disposition')).toBe(
      'attachment; filename="keygate-usage-2026-11-organization-2.jsonl"',
    );
    const lines = r.text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ month: '2026-11', organization_id: 2, key_id: 2000, admitted: 11, forwarded_4xx: 11 }),
    ]);
    expect(Object.keys(JSON.parse(lines[0]))).toEqual([...EXPORT_COLUMNS]);
    expect((await call('/api/usage/export?month=2026-10&format=jsonl')).text).toBe('');
    expect((await call('/api/usage/export?month=2026-10')).text).toBe(EXPORT_COLUMNS.join(',') + '\r\n');
  });

  it('HEAD answers the head alone', async () => {
    const r = await call('/api/usage/export?month=2026-11', 'HEAD');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.text).toBe('');
  });

  it('refuses a month missing or not YYYY-MM, a format not known, an organization not there', async () => {
    expectRefusal(await call('/api/usage/export'), 400, 'invalid_request', /^month is required/);
    for (const month of ['2026-13', '2026-1', 'november', '2026-11-01'])
      expectRefusal(await call(`/api/usage/export?month=${month}`), 400, 'invalid_request', /^month must be YYYY-MM/);
    expectRefusal(await call('/api/usage/export?month=2026-11&format=xml'), 400, 'invalid_request', /^format must be/);
    expectRefusal(await call('/api/usage/export?month=2026-11&organization=0'), 400, 'invalid_request', /organization/);
    expectRefusal(await call('/api/usage/export?month=2026-11&organization=999999'), 404, 'not_found', /999999/);
  });

  it('a CSV field: plain, quoted, quotes doubled, a formula made text', () => {
    expect(csvField(12)).toBe('12');
    expect(csvField('plain name')).toBe('plain name');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('cr\ronly')).toBe('"cr\ronly"');
    expect(csvField('+1')).toBe("'+1");
    expect(csvField('@sum,x')).toBe(`"'@sum,x"`);
  });
});
