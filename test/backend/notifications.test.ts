// Notifications through the gateway: the list's query rules, the opaque cursor (stable while new
// notifications arrive, refused when forged, foreign, expired or garbled), mark one / all read.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock(Date.UTC(2026, 10, 22, 12, 0, 0));
let s: Stack;
const W = '/v2/workspaces/100/notifications';

const get = (path: string, key = K.wsViewer, ip = '10.0.21.1') => s.request('GET', path, { key, ip });
const post = (path: string, key = K.editorPk, body?: unknown) =>
  s.request('POST', path, { key, ip: '10.0.21.2', body });

async function insert(workspaceId: number, n: number, read = false): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const [r] = await s.db.query(
      `INSERT INTO notifications (workspace_id, type, severity, category, title, body, read_at)
       VALUES ($1, 'dns', 'warning', 'deliverability', $2, 'body', CASE WHEN $3::boolean THEN now() END) RETURNING id`,
      [workspaceId, `n${i}`, read],
    );
    ids.push(r.id);
  }
  return ids;
}

async function allIds(workspaceId: number, unreadOnly = false): Promise<number[]> {
  const rows = await s.db.query(
    `SELECT id FROM notifications WHERE workspace_id = $1 AND ($2::boolean = false OR read_at IS NULL) ORDER BY id DESC`,
    [workspaceId, unreadOnly],
  );
  return rows.map((r) => r.id);
}

beforeAll(async () => {
  s = await startStack({ clock });
  // 3 seeded in 100 (id 3 read) + 20 unread + 3 read; 4 in 101.
  await insert(100, 20);
  await insert(100, 3, true);
  await insert(101, 4);
});
afterAll(async () => s?.close());
beforeEach(() => clock.advance(60_000));

describe('notifications: list', () => {
  it('lists newest first with the spec fields, and the next cursor in meta', async () => {
    const r = await get(W);
    expect(r.status).toBe(200);
    const ids = await allIds(100);
    expect(r.body.data.map((n: any) => n.id)).toEqual(ids);
    expect(r.body.meta).toMatchObject({ next_cursor: null, has_more: false, limit: 50, unread_count: 22 });
    expect(r.body.pagination).toEqual({ page: 1, per_page: 50, total: 26, total_pages: 1, has_more: false });
    const seeded = r.body.data.find((n: any) => n.id === 1);
    expect(seeded).toEqual({
      id: 1,
      type: 'dns',
      severity: 'critical',
      category: 'deliverability',
      title: 'SPF missing',
      body: 'Add an SPF record.',
      emailAccountId: 5000,
      readAt: null,
      createdAt: expect.any(String),
      isRead: false,
    });
    const read = r.body.data.find((n: any) => n.id === 3);
    expect(read.isRead).toBe(true);
    expect(typeof read.readAt).toBe('string');
    expect(read.emailAccountId).toBeNull();
  });

  it('unreadOnly=true lists only unread ones', async () => {
    const r = await get(`${W}?unreadOnly=true`);
    expect(r.status).toBe(200);
    expect(r.body.data.map((n: any) => n.id)).toEqual(await allIds(100, true));
    expect(r.body.data.every((n: any) => n.isRead === false && n.readAt === null)).toBe(true);
    expect((await get(`${W}?unreadOnly=false`)).body.data).toHaveLength(26);
  });

  it('refuses unreadOnly other than true or false', async () => {
    for (const v of ['yes', '1', 'TRUE', '']) {
      const r = await get(`${W}?unreadOnly=${v}`);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('invalid_request');
      expect(r.body.error.details.field).toBe('unreadOnly');
    }
  });

  it('accepts limit 1 to 100 and refuses anything else', async () => {
    for (const v of ['0', '101', '-1', '1.5', 'abc', '', '1e2']) {
      const r = await get(`${W}?limit=${encodeURIComponent(v)}`);
      expect(r.status, `limit=${v}`).toBe(400);
      expect(r.body.error.details.field).toBe('limit');
    }
    expect((await get(`${W}?limit=1`)).body.data).toHaveLength(1);
    expect((await get(`${W}?limit=100`)).body.data).toHaveLength(26);
  });

  it('refuses unknown query parameters', async () => {
    const r = await get(`${W}?page=2`);
    expect(r.status).toBe(400);
    expect(r.body.error.details.field).toBe('page');
  });

  it('is scoped to the path workspace', async () => {
    const r = await s.request('GET', '/v2/workspaces/101/notifications', { key: K.wsOther, ip: '10.0.21.3' });
    expect(r.body.data.map((n: any) => n.id)).toEqual(await allIds(101));
  });
});

describe('notifications: cursor', () => {
  it('pages through everything exactly once while new notifications arrive', async () => {
    const before = await allIds(100);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = cursor ? `?limit=5&cursor=${encodeURIComponent(cursor)}` : '?limit=5';
      const r = await get(W + q);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(5);
      seen.push(...r.body.data.map((n: any) => n.id));
      expect(r.body.pagination.page).toBe(pages + 1);
      cursor = r.body.meta.next_cursor;
      expect(r.body.meta.has_more).toBe(cursor !== null);
      pages++;
      // New notifications arrive between pages: they are newer, so they never shift the pages after the cursor.
      await insert(100, 2);
    } while (cursor);
    expect(pages).toBe(6);
    expect(seen).toEqual(before);
  });

  it('pages the unread filter and keeps it bound to the cursor', async () => {
    const first = await get(`${W}?unreadOnly=true&limit=3`);
    const cursor = first.body.meta.next_cursor as string;
    const next = await get(`${W}?unreadOnly=true&limit=3&cursor=${encodeURIComponent(cursor)}`);
    expect(next.status).toBe(200);
    const unread = await allIds(100, true);
    expect([...first.body.data, ...next.body.data].map((n: any) => n.id)).toEqual(unread.slice(0, 6));
    const other = await get(`${W}?unreadOnly=false&limit=3&cursor=${encodeURIComponent(cursor)}`);
    expect(other.status).toBe(400);
    expect(other.body.error.details.field).toBe('cursor');
  });

  it('refuses a forged, garbled, foreign or expired cursor', async () => {
    const r = await get(`${W}?limit=2`);
    const cursor = r.body.meta.next_cursor as string;
    const [payload, mac] = cursor.split('.');
    const p = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = `${Buffer.from(JSON.stringify({ ...p, i: p.i + 1000 })).toString('base64url')}.${mac}`;
    const foreignWs = `${Buffer.from(JSON.stringify({ ...p, w: 101 })).toString('base64url')}.${mac}`;
    const flipped = `${payload}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [forged, foreignWs, flipped, 'garbage', `${payload}`, `${payload}.${mac}.x`, '%%%']) {
      const b = await get(`${W}?limit=2&cursor=${encodeURIComponent(bad)}`);
      expect(b.status, bad).toBe(400);
      expect(b.body.error.code).toBe('invalid_request');
      expect(b.body.error.details.field).toBe('cursor');
    }
    // A genuine cursor of workspace 101 is refused in 100.
    const other = await s.request('GET', '/v2/workspaces/101/notifications?limit=1', {
      key: K.wsOther,
      ip: '10.0.21.3',
    });
    const c101 = other.body.meta.next_cursor as string;
    expect((await get(`${W}?limit=2&cursor=${encodeURIComponent(c101)}`)).status).toBe(400);
    // Still valid now; expired after a day.
    expect((await get(`${W}?limit=2&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
    clock.advance(25 * 3_600_000);
    const old = await get(`${W}?limit=2&cursor=${encodeURIComponent(cursor)}`);
    expect(old.status).toBe(400);
    expect(old.body.error.message).toMatch(/expired/);
  });
});

describe('notifications: mark read', () => {
  it('marks one read and keeps the first readAt', async () => {
    const r = await post(`${W}/1/read`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: 1, isRead: true, readAt: new Date(clock.now()).toISOString() });
    const first = r.body.data.readAt;
    clock.advance(60_000);
    const again = await post(`${W}/1/read`, K.editorPk, {});
    expect(again.status).toBe(200);
    expect(again.body.data.readAt).toBe(first);
  });

  it('is 404 for a notification of another workspace or none, and refuses a body', async () => {
    const [foreign] = await allIds(101);
    expect((await post(`${W}/${foreign}/read`)).status).toBe(404);
    expect((await post(`${W}/999999/read`)).body.error.code).toBe('not_found');
    expect((await post(`${W}/99999999999/read`)).status).toBe(404);
    const b = await post(`${W}/2/read`, K.editorPk, { all: true });
    expect(b.status).toBe(400);
    expect(b.body.error.details.field).toBe('all');
  });

  it('needs notifications:manage at EDITOR', async () => {
    const r = await post(`${W}/2/read`, K.wsViewer);
    expect(r.status).toBe(403);
    expect(r.body.errorCode).toBe('150003');
  });

  it('marks all read in the workspace only', async () => {
    const unread = (await allIds(100, true)).length;
    const r = await post(`${W}/read-all`);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ updated: unread, readAt: new Date(clock.now()).toISOString() });
    const after = await get(`${W}?unreadOnly=true`);
    expect(after.body.data).toEqual([]);
    expect(after.body.meta.unread_count).toBe(0);
    expect((await allIds(101, true)).length).toBe(4);
    expect((await post(`${W}/read-all`)).body.data.updated).toBe(0);
  });
});
