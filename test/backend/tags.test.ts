// Tags domain of /v2, through the gateway.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

const W = '/v2/workspaces/100';
const clock = new FakeClock();
let s: Stack;

beforeAll(async () => {
  s = await startStack({ clock, extra: { tags: [{ id: 3, workspaceId: 101, name: 'elsewhere' }] } });
});
afterAll(async () => s?.close());
beforeEach(() => clock.advance(60_000));

const req = (method: string, path: string, body?: unknown, key = K.wsAdmin) => s.request(method, path, { key, body });

describe('GET /tags', () => {
  it('answers in Envelope A: an array of {id, name}', async () => {
    const r = await req('GET', `${W}/tags`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      success: true,
      data: [
        { id: 1, name: 'priority' },
        { id: 2, name: 'sales' },
      ],
      errorCode: null,
      errorMessage: null,
    });
    // Only the workspace's own tags.
    const other = await req('GET', '/v2/workspaces/101/tags', undefined, K.wsOther);
    expect(other.body.data).toEqual([{ id: 3, name: 'elsewhere' }]);
  });

  it('is readable by a VIEWER key; creating needs more than VIEWER', async () => {
    expect((await req('GET', `${W}/tags`, undefined, K.wsViewer)).status).toBe(200);
    const w = await req('POST', `${W}/tags`, { name: 'viewer-made' }, K.wsViewer);
    expect(w.status).toBe(403);
    expect(w.body.errorCode).toBe('150003');
  });
});

describe('POST /tags', () => {
  it('creates a tag (201, Envelope B) that the list then shows', async () => {
    const r = await req('POST', `${W}/tags`, { name: '  Cold leads ' });
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({ id: expect.any(Number), name: 'Cold leads' });
    expect(r.body.meta.request_id).toEqual(expect.any(String));
    const list = await req('GET', `${W}/tags`);
    expect(list.body.data).toContainEqual(r.body.data);
  });

  it('answers 409 conflict for a duplicate name in the workspace, case-insensitive', async () => {
    for (const name of ['priority', 'PRIORITY', 'Sales']) {
      const r = await req('POST', `${W}/tags`, { name });
      expect(r.status, name).toBe(409);
      expect(r.body.error.code).toBe('conflict');
    }
    // The same name is free in another workspace.
    const other = await req('POST', '/v2/workspaces/101/tags', { name: 'Priority' }, K.wsOther);
    expect(other.status).toBe(201);
  });

  it('validates the body strictly', async () => {
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'x'.repeat(65) }, 'name'],
      [{ name: 'ok', color: 'red' }, 'color'],
      [{ name: 5 }, 'name'],
    ] as const) {
      const r = await req('POST', `${W}/tags`, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'invalid_request', details: { field } });
    }
  });
});

describe('PUT /accounts/{id}/tags', () => {
  it('replaces the account tags', async () => {
    const r = await req('PUT', `${W}/accounts/5001/tags`, { tagIds: [2, 1, 2] });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      accountId: 5001,
      tags: [
        { id: 1, name: 'priority' },
        { id: 2, name: 'sales' },
      ],
    });
    const one = await req('PUT', `${W}/accounts/5001/tags`, { tagIds: [2] });
    expect(one.body.data.tags).toEqual([{ id: 2, name: 'sales' }]);
    expect((await req('GET', `${W}/accounts/5001`)).body.data.tags).toEqual([{ id: 2, name: 'sales' }]);
    const none = await req('PUT', `${W}/accounts/5001/tags`, { tagIds: [] });
    expect(none.body.data.tags).toEqual([]);
  });

  it("answers 400 naming unknown tag ids (another workspace's tags included) and changes nothing", async () => {
    const r = await req('PUT', `${W}/accounts/5000/tags`, { tagIds: [2, 3, 999] });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'invalid_request',
      details: { field: 'tagIds', unknownTagIds: [3, 999] },
    });
    expect(r.body.error.message).toMatch(/3, 999/);
    expect((await req('GET', `${W}/accounts/5000`)).body.data.tags).toEqual([{ id: 1, name: 'priority' }]);
  });

  it('answers 404 for an account of another workspace, 400 for a bad body', async () => {
    const r = await req('PUT', `${W}/accounts/5100/tags`, { tagIds: [1] });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    for (const body of [{}, { tagIds: ['1'] }, { tagIds: [1], extra: true }]) {
      const b = await req('PUT', `${W}/accounts/5000/tags`, body);
      expect(b.status).toBe(400);
      expect(b.body.error.code).toBe('invalid_request');
    }
  });
});
