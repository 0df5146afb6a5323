// The operations listener (issue 20, defect 10): it binds ADMIN_HOST, and a flood of /readyz costs the
// database nothing beyond the background round of checks (one a second): before, each probe ran its
// own query, and a flood cut the gateway's cache-miss throughput by three quarters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { openTestDb } from '../helpers/db.js';
import { seedWith, K } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import type { Db } from '../../src/db/index.js';

describe('the operations listener under a /readyz flood', () => {
  let db: Db & { drop(): Promise<void> };
  let s: Stack;
  let pings = 0;
  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    const ping = db.ping.bind(db);
    db.ping = () => {
      pings++;
      return ping();
    };
    s = await startStack({ db });
  });
  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('answers a flood of /readyz from the background checks, one database round trip a second', async () => {
    const started = Date.now();
    pings = 0;
    let served = 0;
    let gateway = 0;
    const flood = async () => {
      for (let i = 0; i < 40; i++) {
        const r = await fetch(s.adminUrl + '/readyz');
        expect(r.status).toBe(200);
        const body = await r.json();
        // The last background round's verdict (on a busy machine a ping may be late: either is fine here).
        expect(['up', 'down']).toContain(body.checks.database);
        served++;
      }
    };
    // Gateway traffic goes on meanwhile.
    const traffic = async () => {
      for (let i = 0; i < 20; i++) {
        const r = await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: `10.70.0.${i % 5}` });
        expect(r.status).toBe(200);
        gateway++;
      }
    };
    // 16 clients: within ADMIN_MAX_CONNECTIONS (32), whose excess connections are refused.
    await Promise.all([...Array.from({ length: 16 }, flood), traffic()]);
    const seconds = (Date.now() - started) / 1000;
    expect(served).toBe(640);
    expect(gateway).toBe(20);
    // One background round a second (and one that may be under way at each end).
    expect(pings).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
  });

  it('sees a dependency change within a couple of background rounds', async () => {
    const ping = db.ping;
    db.ping = () => Promise.reject(new Error('down'));
    try {
      const deadline = Date.now() + 10_000;
      let state = '';
      while (Date.now() < deadline && state !== 'down') {
        state = (await (await fetch(s.adminUrl + '/readyz')).json()).checks.database;
        if (state !== 'down') await new Promise((r) => setTimeout(r, 100));
      }
      expect(state).toBe('down');
      expect((await fetch(s.adminUrl + '/readyz')).status).toBe(200);
    } finally {
      db.ping = ping;
    }
  });
});

describe('ADMIN_HOST', () => {
  let s: Stack;
  beforeAll(async () => {
    // The gateway on 127.0.0.1 (HOST), its operations listener on another loopback address.
    s = await startStack({ env: { ADMIN_HOST: '127.0.0.2' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('is where the operations listener binds, and only there', async () => {
    const admin = new URL(s.adminUrl);
    expect(admin.hostname).toBe('127.0.0.2');
    expect((await fetch(s.adminUrl + '/healthz')).status).toBe(200);
    const elsewhere = await fetch(`http://127.0.0.1:${admin.port}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    expect(elsewhere).toBe(0);
    expect((await fetch(s.gatewayUrl + '/v2/workspaces/100/tags')).status).toBe(401);
  });
});
