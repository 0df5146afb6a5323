// Issue 20, defect 1: the request-body budget is shared fairly. One key opens as many uploads as it
// can, each sending all but its last byte, from many addresses; another key's uploads, from an address
// of their own, must all go through meanwhile. Driven against the real program (src/cli.ts start).
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProgram, type GatewayProgram } from '../helpers/gateway-program.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';
import { TESTED_CLIENT } from './upstreams/forwarder-kit.js';

const HOG = K.wsAdmin;
const VICTIM = K.ownerPk;
const MiB = 1024 * 1024;

let gateway: GatewayProgram;
let port: number;
let upstream: http.Server;
const hogs: net.Socket[] = [];

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end('{"data":{"id":1}}');
    });
  });
  const { url: upstreamUrl } = await listenLocal(upstream);
  gateway = await startGatewayProgram({
    UPSTREAM_URL: upstreamUrl,
    BODY_LIMIT_BYTES: String(MiB),
    BODY_BUFFER_MAX_BYTES: String(16 * MiB),
    BODY_TIMEOUT_MS: '20000',
    ...TESTED_CLIENT,
  });
  port = gateway.port;
}, 180_000);

afterAll(async () => {
  for (const s of hogs) s.destroy();
  await gateway?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

/** An upload of 1 MiB that sends all but its last byte, then holds; resolves once all is written. */
function hold(i: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      const head =
        `POST /v2/workspaces/100/accounts HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${HOG}\r\n` +
        `x-forwarded-for: 10.1.${i >> 8}.${i & 255}\r\ncontent-type: application/json\r\ncontent-length: ${MiB}\r\n\r\n`;
      s.write(head);
      s.write(Buffer.alloc(MiB - 1, 0x20), () => resolve());
    });
    s.on('error', reject);
    hogs.push(s);
  });
}

/** A whole 10 KiB upload of the victim key: its status. */
function upload(): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ pad: 'v'.repeat(10 * 1024) });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v2/workspaces/100/accounts',
        agent: false,
        headers: {
          authorization: `Bearer ${VICTIM}`,
          'x-forwarded-for': '10.9.9.9',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.runIf(Boolean(process.env.DATABASE_URL))('the body budget under one hostile key', () => {
  it('lets every upload of another key through while one key holds as much as it can', async () => {
    // More held uploads than the whole pool could take, from 64 addresses: the per-address share
    // alone would not stop them, the per-key share must.
    await Promise.all(Array.from({ length: 64 }, (_, i) => hold(i)));
    // The gateway has read what was sent (the uploads are authorized, their bodies are being read).
    await new Promise((r) => setTimeout(r, 1000));
    const statuses: number[] = [];
    for (let i = 0; i < 24; i++) statuses.push(await upload());
    expect(
      statuses.filter((s) => s !== 201),
      gateway.output(),
    ).toEqual([]);
    // The hog's uploads were held, not answered: the test measured what it meant to.
    expect(hogs.filter((s) => !s.destroyed).length).toBeGreaterThan(0);
  }, 60_000);
});
