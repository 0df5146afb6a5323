// docs/decisions.md section 3: the 5th failed authentication from one address starts the cooldown, and the
// 6th request carrying a key gets 150006, also when all of them arrive at once (counting a failure and
// checking the cooldown are one atomic step in the store), and whatever the address family: an IPv6
// client holds a whole /64 (one subscriber's prefix), and an IPv4-mapped IPv6 spelling is the IPv4
// address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

const clock = new FakeClock();
let s: Stack;
let rec: Recorder;
beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({ clock, upstreamOverride: rec.url }); // Redis when REDIS_URL is set
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});

const invalidKeys = ['svc_ws_' + 'R'.repeat(40), 'svc_pk_' + 'R'.repeat(40), 'svc_ws_short'];

describe('failed-authentication cooldown under parallel requests', () => {
  it('12 invalid keys at once from one address: exactly five 401 150002, seven 429 150006 (five rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const ip = `10.73.${round}.1`;
      const rs = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          s.request('GET', '/v2/workspaces/100/tags', { key: invalidKeys[n % invalidKeys.length], ip }),
        ),
      );
      const codes = rs.map((r) => `${r.status} ${r.body?.errorCode}`).sort();
      expect(codes).toEqual([...Array(5).fill('401 150002'), ...Array(7).fill('429 150006')]);
      for (const r of rs.filter((r) => r.status === 429)) expect(Number(r.headers.get('retry-after'))).toBe(900);
    }
  });

  it('/v1: 12 invalid keys at once, exactly five unauthorized, the rest too_many_failed_attempts', async () => {
    const ip = '10.73.9.1';
    const rs = await Promise.all(
      Array.from({ length: 12 }, () =>
        s.request('GET', '/v1/email-accounts', { apiKey: 'svc_v1_' + 'R'.repeat(40), ip }),
      ),
    );
    const codes = rs.map((r) => `${r.status} ${r.body?.error_code}`).sort();
    expect(codes).toEqual([...Array(5).fill('401 unauthorized'), ...Array(7).fill('429 too_many_failed_attempts')]);
  });
});

const invalid = 'svc_ws_' + 'F'.repeat(40);
const get = (ip: string, key: string) => s.request('GET', '/v2/workspaces/100/tags', { ip, key });

describe('cooldown by address family', () => {
  it('twenty addresses of one IPv6 /64 share five tries', async () => {
    const addresses = Array.from({ length: 20 }, (_, n) => `2001:db8:7:1::${(n + 1).toString(16)}`);
    for (const ip of addresses.slice(0, 5)) expect((await get(ip, invalid)).body.errorCode).toBe('150002');
    for (const ip of addresses.slice(5)) {
      const r = await get(ip, invalid);
      expect(r.status).toBe(429);
      expect(r.body.errorCode).toBe('150006');
    }
    // The same /64 spelled in full and in capitals, a valid key: still cooling down.
    expect((await get('2001:0DB8:0007:0001:ffff:0:0:1', K.wsAdmin)).body.errorCode).toBe('150006');
    // The next /64 is another client.
    expect((await get('2001:db8:7:2::1', K.wsAdmin)).status).toBe(200);
  });

  it("IPv4-mapped IPv6 spellings share the IPv4 address's tries", async () => {
    const v4 = '10.74.0.1';
    const mapped = ['::ffff:10.74.0.1', '::FFFF:10.74.0.1', '0:0:0:0:0:ffff:10.74.0.1', '::ffff:a4a:1'];
    expect((await get(v4, invalid)).body.errorCode).toBe('150002');
    for (const ip of mapped) expect((await get(ip, invalid)).body.errorCode).toBe('150002');
    expect((await get(v4, K.wsAdmin)).body.errorCode).toBe('150006');
    for (const ip of mapped) expect((await get(ip, K.wsAdmin)).body.errorCode).toBe('150006');
  });
});
