// The real program (`keygate gateway`, a child process) in front of a `ws` echo upstream (issue 37, Must
// show: "a WebSocket echo through the gateway with a revocation while the connection is open"): a tunnel
// echoes; its key revoked while it is open by an operator's `keygate keys revoke` (the service layer:
// the revocation committed, then the organization's access version bumped in the shared Redis) closes
// it with 1008 at the next re-check; SIGTERM closes another with 1001 at the drain's deadline, and the
// program exits.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { openTestDb } from '../helpers/db.js';
import { schemaUrl, spawnGatewayOn, type SpawnedGateway } from '../helpers/gateway-program.js';
import { runCli } from '../helpers/cli-program.js';
import { closed, nextMessage, opened, startWsEcho, type WsEcho } from '../helpers/ws-echo.js';
import { K, seedWith } from '../fixtures/seed.js';
import { applySeed, parseSeed } from '../../src/backend/seed.js';
import type { Db } from '../../src/db/index.js';

// The program is another process: it needs a PostgreSQL it can reach (the test's own schema there), and
// the CLI's revocation reaches it through the access version in a Redis both share.
const services = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);
describe.skipIf(!services)('WebSocket through the real gateway program', () => {
  let echo: WsEcho;
  let db: Db & { drop(): Promise<void> };
  let gw: SpawnedGateway;
  let shared: Record<string, string>;

  beforeAll(async () => {
    echo = await startWsEcho();
    db = (await openTestDb()) as Db & { drop(): Promise<void> };
    await applySeed(db, parseSeed(seedWith()));
    shared = {
      DATABASE_URL: schemaUrl(process.env.DATABASE_URL!, db.schema),
      REDIS_URL: process.env.REDIS_URL!,
      REDIS_KEY_PREFIX: `ws${randomBytes(4).toString('hex')}:`,
    };
    gw = await spawnGatewayOn(shared.DATABASE_URL, {
      ...shared,
      UPSTREAM_URL: echo.url,
      WEBSOCKET_RECHECK_MS: '200',
      DRAIN_TIMEOUT_MS: '500',
    });
    await gw.ready;
  }, 180_000);
  afterAll(async () => {
    if (gw && gw.child.exitCode === null && gw.child.signalCode === null) {
      const exited = new Promise((r) => gw.child.once('exit', r));
      gw.child.kill('SIGKILL');
      await exited;
    }
    await db?.drop();
    await echo?.close();
  });

  const connect = (key: string) =>
    new WebSocket(`ws://127.0.0.1:${gw.port}/v2/workspaces/100`, { headers: { authorization: `Bearer ${key}` } });

  it('echoes, and a key revoked by `keygate keys revoke` while open is closed with 1008', async () => {
    const ws = connect(K.editorPk);
    const res = await opened(ws);
    expect(res.headers['x-request-id']).toBeDefined();
    ws.send('through the program');
    expect(await nextMessage(ws)).toBe('through the program');
    const done = closed(ws);
    const revoked = await runCli(['keys', 'revoke', '1011'], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...shared,
      LOG_LEVEL: 'silent',
    });
    expect(revoked.code, revoked.stderr).toBe(0);
    const c = await done;
    expect(c.code).toBe(1008);
    expect(c.reason).toContain('revoked');
    // The upstream's side closes with the same code; its close frame may be read a moment after the client's.
    for (let i = 0; i < 200 && !echo.closes.includes(1008); i++) await new Promise((r) => setTimeout(r, 10));
    expect(echo.closes).toContain(1008);
  });

  it("SIGTERM closes an open tunnel with 1001 at the drain's deadline, and the program exits", async () => {
    const ws = connect(K.wsAdmin);
    await opened(ws);
    ws.send('before the signal');
    expect(await nextMessage(ws)).toBe('before the signal');
    const done = closed(ws);
    const exited = new Promise<number | null>((r) => gw.child.once('exit', (code) => r(code)));
    gw.child.kill('SIGTERM');
    expect((await done).code).toBe(1001);
    expect(await exited).toBe(0);
    expect(gw.output()).not.toMatch(/"level":(50|60)/);
  });
});
