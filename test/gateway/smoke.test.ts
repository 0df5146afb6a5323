import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { TESTED_CLIENT } from './upstreams/forwarder-kit.js';

let s: Stack;
beforeAll(async () => {
  s = await startStack({ env: TESTED_CLIENT });
});
afterAll(async () => s?.close());

describe('smoke', () => {
  it('answers 150001 without a key, with IP headers only', async () => {
    const r = await s.request('GET', '/v2/workspaces/100/accounts');
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ success: false, data: null, errorCode: '150001', errorMessage: expect.any(String) });
    expect(r.headers.get('x-ratelimit-ip-limit')).toBe('100');
    expect(r.headers.get('x-ratelimit-limit')).toBeNull();
  });
  it('forwards a valid key', async () => {
    const r = await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin });
    expect(r.status).toBe(200);
    expect(r.body.data.plan).toBe('growth');
    // Through to the backend and back: the base seed's three accounts of workspace 100.
    const f = await s.request('GET', '/v2/workspaces/100/accounts', { key: K.wsAdmin });
    expect(f.status).toBe(200);
    expect(f.body.data.map((a: { id: number }) => a.id)).toEqual([5000, 5001, 5002]);
    expect(f.headers.get('x-ratelimit-remaining')).toBe('19');
  });
});
