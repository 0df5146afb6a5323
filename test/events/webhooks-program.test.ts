// Webhooks through the real program (`keygate gateway` in a child process, test/helpers/gateway-program.ts):
// the receiver answers 500, then hangs, and the gateway is killed (SIGKILL) while the attempt hangs; a
// gateway started again on the same database sends the delivery once the dead one's lease has passed,
// and the receiver verifies it with the `standardwebhooks` package. The schedule here is the real clock's
// (a child process takes no injected one), so the timeout is short; test/events/webhooks.test.ts walks the
// whole schedule with an injected clock.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openTestDb } from '../helpers/db.js';
import { schemaUrl, spawnGatewayOn, type SpawnedGateway } from '../helpers/gateway-program.js';
import { seedWith, ALL_SCOPES } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import { getPepper } from '../../src/access/pepper.js';
import { loadPlans } from '../../src/config/plans.js';
import { systemClock } from '../../src/ops/clock.js';
import { serviceContext, type ServiceContext } from '../../src/access/service/context.js';
import { createKey } from '../../src/access/service/keys.js';
import { createEndpoint } from '../../src/access/events/endpoints.js';
import type { Db } from '../../src/db/types.js';
import { startReceiver } from './receiver.js';

const ENV = { WEBHOOKS_POLL_MS: '50', WEBHOOKS_TIMEOUT_MS: '1000', EVENTS_SCAN_MS: '3600000' };
const until = <T>(fn: () => T | Promise<T>) => vi.waitFor(fn, { timeout: 60_000, interval: 50 });

// The program is another process: it needs a PostgreSQL both it and the test reach.
describe.skipIf(!process.env.DATABASE_URL)('the gateway program', () => {
  let db: Db & { drop(): Promise<void> };
  let ctx: ServiceContext;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const gateways: SpawnedGateway[] = [];

  const start = async () => {
    const g = await spawnGatewayOn(schemaUrl(process.env.DATABASE_URL!, db.schema), ENV);
    gateways.push(g);
    await g.ready;
    return g;
  };
  const delivery = async () =>
    (await db.query(`SELECT status, attempts, last_status, last_error FROM webhook_deliveries ORDER BY id`))[0];

  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    const plans = loadPlans('config/plans.json');
    ctx = serviceContext(
      {
        db,
        clock: systemClock,
        pepper: await getPepper(db),
        plans: () => plans,
        scopes: () => Object.fromEntries(ALL_SCOPES.map((s) => [s, 'VIEWER' as const])),
        accessChanged: async () => {},
      },
      { kind: 'cli', osUser: 'test' },
    );
    receiver = await startReceiver();
  }, 60_000);
  afterAll(async () => {
    for (const g of gateways) if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill('SIGKILL');
    receiver?.server?.closeAllConnections();
    receiver?.server?.close();
    await db?.drop();
  });

  it('a receiver that fails, then hangs while the gateway is killed, gets the event from the next gateway', async () => {
    const made = await createEndpoint(ctx, { url: receiver.url });
    receiver.secret = made.secret;
    receiver.mode = 'fail';
    const first = await start();
    const { key } = await createKey(ctx, { type: 'workspace', workspaceId: 100, name: 'told', scopes: [] });
    await until(async () => expect(await delivery()).toMatchObject({ attempts: 1, last_status: 500 }));

    // The retry, 5 s later, hangs; the process dies while it waits.
    receiver.mode = 'hang';
    await until(() => expect(receiver.got).toHaveLength(2));
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    expect(await delivery()).toMatchObject({ status: 'pending', attempts: 2 });

    receiver.mode = 'ok';
    await start();
    await until(async () =>
      expect(await delivery()).toMatchObject({ status: 'delivered', attempts: 3, last_status: 204 }),
    );
    expect(receiver.got.map((g) => [g.mode, g.type, g.verified])).toEqual([
      ['fail', 'key.created', true],
      ['hang', 'key.created', true],
      ['ok', 'key.created', true],
    ]);
    expect(new Set(receiver.got.map((g) => g.id)).size).toBe(1);
    expect(receiver.got[2].body.data.key).toMatchObject({ id: key.id, name: 'told', hint: key.hint });
  }, 300_000);
});
