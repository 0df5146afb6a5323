// The failed-authentication cooldown: 5 failures per IP within 15 minutes, then 15 minutes of 150006.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock();
let s: Stack;
let rec: Recorder;
beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({ clock, upstreamOverride: rec.url });
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});

const invalid = 'svc_ws_' + 'N'.repeat(40);
const get = (ip: string, key?: string) => s.request('GET', '/v2/workspaces/100/accounts', { ip, key });

describe('failed-authentication cooldown', () => {
  it('the 6th keyed request after 5 invalid keys gets 150006 even with a valid key, for 15 minutes', async () => {
    const ip = '10.2.0.1';
    for (let i = 0; i < 5; i++) {
      const r = await get(ip, i % 2 ? invalid : 'svc_pk_short'); // malformed keys count too
      expect(r.status).toBe(401);
      expect(r.body.errorCode).toBe('150002');
    }
    const r = await get(ip, K.wsAdmin);
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ success: false, data: null, errorCode: '150006', errorMessage: expect.any(String) });
    expect(r.headers.get('retry-after')).toBe('900');
    expect(r.headers.get('x-ratelimit-ip-limit')).toBe('100');
    // Spends nothing: another address shows the key untouched.
    expect((await get('10.2.0.2', K.wsAdmin)).headers.get('x-ratelimit-remaining')).toBe('19');
    // Other addresses are unaffected; a request without a key is still 150001.
    expect((await get(ip)).body.errorCode).toBe('150001');
    clock.advance(14 * 60_000 + 30_000);
    expect((await get(ip, K.wsAdmin)).headers.get('retry-after')).toBe('30');
    clock.advance(30_000);
    expect((await get(ip, K.wsAdmin)).status).toBe(200);
  });

  it('a request without a key never counts', async () => {
    const ip = '10.2.0.3';
    for (let i = 0; i < 10; i++) expect((await get(ip)).body.errorCode).toBe('150001');
    for (let i = 0; i < 4; i++) await get(ip, invalid);
    expect((await get(ip, K.wsAdmin)).status).toBe(200);
  });

  it('failures older than 15 minutes are forgotten', async () => {
    const ip = '10.2.0.4';
    for (let i = 0; i < 4; i++) await get(ip, invalid);
    clock.advance(15 * 60_000 + 1000);
    await get(ip, invalid);
    expect((await get(ip, K.wsAdmin)).status).toBe(200);
  });

  it('/v1 invalid keys count toward the same cooldown, answered in the v1 shape', async () => {
    const ip = '10.2.0.5';
    for (let i = 0; i < 5; i++) {
      const r = await s.request('GET', '/v1/email-accounts', { ip, apiKey: 'svc_v1_' + 'Q'.repeat(40) });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ error_code: 'unauthorized', message: expect.any(String), details: {} });
    }
    const v1 = await s.request('GET', '/v1/email-accounts', { ip, apiKey: K.partner });
    expect(v1.status).toBe(429);
    expect(v1.body.error_code).toBe('too_many_failed_attempts');
    expect(Number(v1.headers.get('retry-after'))).toBe(900);
    expect((await get(ip, K.wsAdmin)).body.errorCode).toBe('150006');
  });
});
