// A service behind TLS (an `https://` target) through the real program, over the run's upstream client
// (the lean one unless UPSTREAM_CLIENT says undici). A host-name target is connected at the addresses
// its name resolves to (docs/services.md), but TLS still speaks to the name: SNI sent and the certificate
// checked against it, as for any service whose certificate names its host and not its addresses (a
// private CA trusted through NODE_EXTRA_CA_CERTS, as for any node program). The request is forwarded
// whole over reused keep-alive connections; a certificate that does not name the target is refused with
// a 502 in the interface's envelope.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { createSecureContext, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProgram, type GatewayProgram } from '../helpers/gateway-program.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';
import { TESTED_CLIENT } from './upstreams/forwarder-kit.js';

// The certificate is made with openssl, as Debian ships it; without it there is nothing to serve TLS with.
const HAS_OPENSSL = spawnSync('openssl', ['version']).status === 0;
let dir: string;
let upstream: https.Server;
let upstreamPort: number;
let gateway: GatewayProgram | undefined;
let wrongName: GatewayProgram | undefined;
const seen: { path: string; authorization: boolean; socket: number }[] = [];
/** The server names (SNI) of the connections' handshakes. */
const names: string[] = [];
const sockets = new Map<object, number>();

/** A self-signed certificate for the name `localhost` only, as a service's names its host. */
function certificate(): { key: Buffer; cert: Buffer; certPath: string } {
  dir = mkdtempSync(join(tmpdir(), 'keygate-tls-'));
  const key = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost',
      '-keyout',
      key,
      '-out',
      certPath,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key), cert: readFileSync(certPath), certPath };
}

const get = (port: number) =>
  fetch(`http://127.0.0.1:${port}/v2/workspaces/100/tags`, { headers: { authorization: `Bearer ${K.wsAdmin}` } });

describe.runIf(Boolean(process.env.DATABASE_URL) && HAS_OPENSSL)('an https:// service', () => {
  beforeAll(async () => {
    const { key, cert, certPath } = certificate();
    const context = createSecureContext({ key, cert });
    const sni = (name: string, done: (err: Error | null, ctx: typeof context) => void) => {
      names.push(name);
      done(null, context);
    };
    upstream = https.createServer({ key, cert, SNICallback: sni }, (req, res) => {
      const socket = req.socket as TLSSocket;
      if (!sockets.has(socket)) sockets.set(socket, sockets.size + 1);
      seen.push({
        path: req.url!,
        authorization: req.headers.authorization !== undefined,
        socket: sockets.get(socket)!,
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":[]}');
    });
    upstreamPort = (await listenLocal(upstream)).port;
    const trust = { NODE_EXTRA_CA_CERTS: certPath, ...TESTED_CLIENT };
    [gateway, wrongName] = await Promise.all([
      startGatewayProgram({ UPSTREAM_URL: `https://localhost:${upstreamPort}`, ...trust }),
      // The same certificate reached by an address it does not name.
      startGatewayProgram({ UPSTREAM_URL: `https://127.0.0.2:${upstreamPort}`, ...trust }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await wrongName?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('forwards over TLS with the target name as SNI, credentials stripped, connections reused', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await get(gateway!.port);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ data: [] });
    }
    expect(seen).toHaveLength(5);
    for (const s of seen) expect(s).toMatchObject({ path: '/v2/workspaces/100/tags', authorization: false });
    expect(names).toEqual(['localhost']);
    // One after another, so one kept-alive connection carries them all.
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it('refuses a certificate that does not name the target: 502 in the envelope, nothing sent', async () => {
    const before = seen.length;
    const r = await get(wrongName!.port);
    expect(r.status).toBe(502);
    const body = (await r.json()) as { error: { code: string } };
    expect(body.error.code).toBe('bad_gateway');
    expect(seen.length).toBe(before);
  });
});
