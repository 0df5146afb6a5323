// lastUsedAt (issue 22 item 3) through the real program: a request's use of a secret is held in the
// gateway (no database write per request) and written when the minute's batch flushes; SIGTERM
// flushes what is held, so nothing is lost. Per secret during a rotation's grace period, so the
// operator sees when the old one was last used. Needs a PostgreSQL server shared with the child.
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { freePort } from '../helpers/redis-server.js';
import { startProgram, type Program } from '../helpers/program.js';
import { getPepper } from '../../src/access/pepper.js';
import { loadPlans } from '../../src/config/plans.js';
import { serviceContext } from '../../src/access/service/context.js';
import { createKey, getKey, rotateKey } from '../../src/access/service/keys.js';

const DEMO = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';

describe.runIf(Boolean(process.env.DATABASE_URL))('lastUsedAt after SIGTERM of the real program', () => {
  let db: Awaited<ReturnType<typeof openTestDb>>;
  let program: Program;
  let port: number;

  beforeAll(async () => {
    db = await openTestDb();
    port = await freePort();
    program = await startProgram({
      PORT: String(port),
      ADMIN_PORT: String(await freePort()),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATABASE_URL: process.env.DATABASE_URL!,
      PGOPTIONS: `-c search_path=${db.schema}`,
      LOG_LEVEL: 'warn',
    });
  }, 90_000);
  afterAll(async () => {
    if (program?.child.exitCode === null) program.child.kill('SIGKILL');
    await db?.drop();
  });

  it('is written on SIGTERM, per key and per secret, and not per request', async () => {
    const plans = loadPlans('config/plans.json');
    const svc = serviceContext(
      {
        db,
        clock: { now: () => Date.now() },
        pepper: await getPepper(db),
        plans: () => plans,
        scopes: () => ({ 'workspace:read': 'VIEWER' }),
        accessChanged: async () => {},
      },
      { kind: 'cli', osUser: 'test' },
    );
    const { key } = await createKey(svc, {
      type: 'workspace',
      workspaceId: 100,
      name: 'rotating',
      scopes: ['workspace:read'],
    });
    const { secret: first } = await rotateKey(svc, key.id, { graceMs: 0 }); // a secret the test knows
    const { secret: second } = await rotateKey(svc, key.id, { graceMs: 3_600_000 });

    const call = (secret: string) =>
      fetch(`http://127.0.0.1:${port}/v2/workspaces/100`, { headers: { authorization: `Bearer ${secret}` } });
    const before = Date.now();
    for (let i = 0; i < 20; i++) expect((await call(DEMO)).status).toBe(200);
    expect((await call(first)).status).toBe(200); // the old secret, in its grace period
    expect((await call(second)).status).toBe(200);
    // Nothing written yet: the batch waits for the minute (or the drain).
    expect(await db.query(`SELECT * FROM api_key_last_use`)).toEqual([]);

    program.child.kill('SIGTERM');
    const [code] = await once(program.child, 'exit');
    expect(code, program.output()).toBe(0);

    const rows = await db.query(`SELECT key_id, last_used_at FROM api_key_last_use ORDER BY key_id`);
    // One row per secret used: the demo key's, and both secrets of the rotated key; 20 requests made one.
    expect(rows.map((r) => r.key_id)).toEqual([1000, key.id, key.id]);
    for (const r of rows) {
      const t = new Date(r.last_used_at).getTime();
      expect(t).toBeGreaterThanOrEqual(before - 1000);
      expect(t).toBeLessThanOrEqual(Date.now());
    }
    const view = await getKey(svc, key.id);
    expect(view.lastUsedAt).not.toBeNull();
    expect(view.previousSecret?.lastUsedAt).not.toBeNull();
    expect((await getKey(svc, 1000)).lastUsedAt).not.toBeNull();
  }, 60_000);
});
