// Legitimate requests while one address holds as many slow connections as it can (issue 36, defect 6).
// The real all-in-one runs under `ulimit -n` (FLOOD_NOFILE, default 1024); clients on 127.0.0.1 send
// GETs through the gateway to the upstream (a demo key) and to the admin API, first alone (the
// baseline), then while 127.0.0.3 opens up to FLOOD_CONNECTIONS (default 4000) connections to each port,
// each sending part of a head and never finishing it. Prints success rate and p99 for both phases.
//
//   npx tsx bench/diagnostics/slow-flood.ts [checkout]   # checkout: a tree with src/cli.ts (default: this one)
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? '.');
const nofile = Number(process.env.FLOOD_NOFILE ?? 1024);
const floodN = Number(process.env.FLOOD_CONNECTIONS ?? 4000);
const REQUESTS = 400;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

function get(url: string, headers: Record<string, string>): Promise<{ ok: boolean; ms: number }> {
  const t = performance.now();
  return new Promise((resolve) => {
    const done = (ok: boolean) => resolve({ ok, ms: performance.now() - t });
    const req = http.get(url, { headers, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => done((res.statusCode ?? 0) > 0 && (res.statusCode ?? 0) < 500));
      res.on('error', () => done(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(false));
  });
}

async function measure(url: string, headers: Record<string, string>) {
  const results: { ok: boolean; ms: number }[] = [];
  let i = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (i++ < REQUESTS) results.push(await get(url, headers));
    }),
  );
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const ok = results.filter((r) => r.ok).length;
  return { success: ok / results.length, p99: Math.round(ms[Math.floor(ms.length * 0.99) - 1]) };
}

async function flood(port: number, sockets: net.Socket[]) {
  for (let i = 0; i < floodN; i += 100)
    await Promise.all(
      Array.from(
        { length: 100 },
        () =>
          new Promise<void>((resolve) => {
            const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.3' });
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

const ports = { PORT: await freePort(), ADMIN_PORT: await freePort(), ADMIN_API_PORT: await freePort() };
const env: NodeJS.ProcessEnv = {
  ...process.env,
  ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  BACKEND_PORT: String(await freePort()),
  DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'keygate-slow-flood-')),
  LOG_LEVEL: 'error',
};
delete env.DATABASE_URL;
const child = spawn(
  'sh',
  ['-c', `ulimit -n ${nofile} && exec '${process.execPath}' --import tsx '${path.join(root, 'src/cli.ts')}' start`],
  { env, cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);
let out = '';
child.stdout!.on('data', (c) => (out += c));
for (let t = Date.now(); !/Authorization: Bearer/.test(out); await new Promise((r) => setTimeout(r, 200)))
  if (Date.now() - t > 90_000 || child.exitCode !== null) throw new Error(`did not start: ${out}`);
const [, key, route] = /Authorization: Bearer (\S+)" http:\/\/[^/]+(\/v2\/\S+)/.exec(out)!;
const targets = {
  gateway: () => measure(`http://127.0.0.1:${ports.PORT}${route}`, { authorization: `Bearer ${key}` }),
  adminApi: () => measure(`http://127.0.0.1:${ports.ADMIN_API_PORT}/`, {}),
};
const rows: Record<string, unknown> = {};
for (const [name, run] of Object.entries(targets)) rows[`${name} alone`] = await run();
const sockets: net.Socket[] = [];
await flood(ports.PORT, sockets);
await flood(ports.ADMIN_API_PORT, sockets);
const held = sockets.filter((s) => !s.destroyed).length;
for (const [name, run] of Object.entries(targets)) rows[`${name} under flood`] = await run();
console.log(JSON.stringify({ checkout: root, nofile, held, ...rows }, null, 1));
for (const s of sockets) s.destroy();
child.kill('SIGKILL');
process.exit(0);
