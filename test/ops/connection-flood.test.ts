// One client address holding as many slow connections as it can (headers sent a byte at a time, never
// finished) must not take the process's descriptors from everyone else: other clients still get answers on
// the gateway port and the admin API port, and a request still reaches the upstream (and Redis, when
// REDIS_URL is given). The real program runs with a low descriptor limit (`ulimit -n` in a shell wrapper)
// so the flood reaches it in a few hundred connections; the other client speaks from 127.0.0.2.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli-program.js';
import { untilReady } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';

interface Started {
  child: ChildProcess;
  output(): string;
}

async function startLimited(env: Record<string, string>, nofile: number): Promise<Started> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  // Redis is kept when the test has one: the flood must leave it descriptors too.
  const args = [process.execPath, ...(await cliArgs()), 'start'].map((a) => `'${a}'`).join(' ');
  const child = spawn('sh', ['-c', `ulimit -n ${nofile} && exec ${args}`], {
    env: { ...base, DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'keygate-flood-')), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  await untilReady(`http://127.0.0.1:${env.ADMIN_PORT}/readyz`, child, () => out);
  return { child, output: () => out };
}

/** Open slow connections from 127.0.0.1 until `n` or until the program refuses them; each sends part of a head. */
async function slowFlood(port: number, n: number, sockets: net.Socket[]): Promise<void> {
  const batch = 50;
  for (let i = 0; i < n; i += batch) {
    await Promise.all(
      Array.from(
        { length: Math.min(batch, n - i) },
        () =>
          new Promise<void>((resolve) => {
            const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
            s.on('error', () => resolve());
            s.on('close', () => resolve());
            s.on('connect', () => {
              s.write('GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ');
              sockets.push(s);
              resolve();
            });
          }),
      ),
    );
  }
}

/** One request from 127.0.0.2: its status, or 0 when the connection was refused or reset. */
function fromOther(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { localAddress: '127.0.0.2', headers, agent: false, timeout: 15_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

describe('one address holding slow connections', () => {
  let p: Started;
  let ports: { gw: number; admin: number; api: number };
  const sockets: net.Socket[] = [];
  beforeAll(async () => {
    ports = { gw: await freePort(), admin: await freePort(), api: await freePort() };
    p = await startLimited(
      {
        PORT: String(ports.gw),
        ADMIN_PORT: String(ports.admin),
        ADMIN_API_PORT: String(ports.api),
        BACKEND_PORT: String(await freePort()),
        // Opened, so the other client (127.0.0.2) reaches them.
        ADMIN_HOST: '0.0.0.0',
        ADMIN_API_HOST: '0.0.0.0',
        LOG_LEVEL: 'warn',
      },
      400,
    );
  }, 90_000);
  afterAll(() => {
    for (const s of sockets) s.destroy();
    p?.child.kill('SIGKILL');
  });

  it('leaves other clients the gateway, the admin API and the upstream', async () => {
    const curl = /Authorization: Bearer (\S+)" http:\/\/[^/]+(\/v2\/\S+)/.exec(p.output());
    expect(curl, p.output()).not.toBeNull();
    const [, key, path] = curl!;
    const upstream = `http://127.0.0.2:${ports.gw}${path}`;
    expect(await fromOther(upstream, { authorization: `Bearer ${key}` })).toBe(200);

    // More connections than the process has descriptors, to each public port.
    await slowFlood(ports.gw, 500, sockets);
    await slowFlood(ports.api, 500, sockets);
    const held = sockets.filter((s) => !s.destroyed).length;

    expect(await fromOther(`http://127.0.0.2:${ports.gw}/v2/workspaces/1/accounts`)).toBe(401);
    expect(await fromOther(`http://127.0.0.2:${ports.api}/`)).toBeGreaterThan(0);
    expect(await fromOther(upstream, { authorization: `Bearer ${key}` })).toBe(200);
    expect(await fromOther(`http://127.0.0.2:${ports.admin}/readyz`)).toBe(200);
    // The program is alive and still holds what it admitted of the flood (it did not give up).
    expect(p.child.exitCode).toBeNull();
    expect(held).toBeGreaterThan(0);
    // The refusals are counted, and logged once per listener and reason, not once per connection.
    const metrics = await fetch(`http://127.0.0.1:${ports.admin}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/keygate_connections_refused_total\{listener="gateway",reason="address"\} [1-9]/);
    expect(p.output().split('connections refused').length - 1).toBeLessThanOrEqual(4);
  }, 120_000);
});

describe('the listeners the all-in-one binds by default', () => {
  let p: Started;
  let ports: { gw: number; admin: number; api: number };
  beforeAll(async () => {
    ports = { gw: await freePort(), admin: await freePort(), api: await freePort() };
    p = await startLimited(
      {
        PORT: String(ports.gw),
        ADMIN_PORT: String(ports.admin),
        ADMIN_API_PORT: String(ports.api),
        BACKEND_PORT: String(await freePort()),
        LOG_LEVEL: 'warn',
      },
      4096,
    );
  }, 90_000);
  afterAll(() => p?.child.kill('SIGKILL'));

  it('keeps the admin API and the operations port on loopback, the gateway on every address', async () => {
    // 127.0.0.2 stands for another address of this machine: a listener on 0.0.0.0 answers there.
    expect(await fromOther(`http://127.0.0.2:${ports.gw}/v2/workspaces/1/accounts`)).toBe(401);
    expect(await fromOther(`http://127.0.0.2:${ports.admin}/healthz`)).toBe(0);
    expect(await fromOther(`http://127.0.0.2:${ports.api}/`)).toBe(0);
    expect(await fromOther(`http://127.0.0.1:${ports.api}/`)).toBeGreaterThan(0);
  }, 60_000);

  it('opens them when ADMIN_HOST and ADMIN_API_HOST say so', async () => {
    const open = await startLimited(
      {
        PORT: String(await freePort()),
        ADMIN_PORT: String(await freePort()),
        ADMIN_API_PORT: String(await freePort()),
        BACKEND_PORT: String(await freePort()),
        ADMIN_HOST: '0.0.0.0',
        ADMIN_API_HOST: '0.0.0.0',
        LOG_LEVEL: 'warn',
      },
      4096,
    );
    try {
      const env = /admin\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(open.output());
      const api = /admin API and console http:\/\/127\.0\.0\.1:(\d+)/.exec(open.output());
      expect(env && api, open.output()).toBeTruthy();
      expect(await fromOther(`http://127.0.0.2:${env![1]}/healthz`)).toBe(200);
      expect(await fromOther(`http://127.0.0.2:${api![1]}/`)).toBeGreaterThan(0);
    } finally {
      open.child.kill('SIGKILL');
    }
  }, 90_000);
});
