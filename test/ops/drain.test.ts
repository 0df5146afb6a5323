// SIGTERM under keep-alive load, driven from outside against the real program (docs/decisions.md section 8):
// after the signal every response says `Connection: close`, no new request is taken on a kept-alive
// connection, and every request that reached the upstream is answered to its client in full.
// `npm start` passes the signal on to the program it runs.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { cliArgs } from '../helpers/cli-program.js';
import { requestWhole, status, untilReady, type WholeAnswer } from '../helpers/program.js';
import { listenLocal } from '../helpers/listen.js';

const KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';

/** A plans file with budgets high enough that the load is forwarded, not refused with 429. */
function roomyPlans(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kg-drain-'));
  const file = join(dir, 'plans.json');
  copyFileSync('config/plans.json', file);
  const plans = JSON.parse(readFileSync(file, 'utf8'));
  for (const p of Object.values(plans) as { read: number }[]) p.read = 1_000_000;
  writeFileSync(file, JSON.stringify(plans));
  return file;
}

async function startProgram(
  command: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; out: () => string; port: number; admin: number }> {
  const [port, admin, backend] = [await freePort(), await freePort(), await freePort()];
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.REDIS_URL;
  let out = '';
  const child = spawn(command[0], command.slice(1), {
    env: {
      ...base,
      PORT: String(port),
      ADMIN_PORT: String(admin),
      BACKEND_PORT: String(backend),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  await untilReady(`http://127.0.0.1:${admin}/readyz`, child, () => out);
  return { child, out: () => out, port, admin };
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

// The two cases start programs of their own on ports of their own: they run side by side.
describe.concurrent('SIGTERM under keep-alive load', () => {
  it('loses no answer: every request the upstream received is answered in full; later ones never reach it', async () => {
    // The recording upstream: which request numbers reached it.
    const reached = new Set<number>();
    const upstream = http.createServer((req, res) => {
      const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n'));
      reached.add(n);
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: { n, pad: 'x'.repeat(2000) } }));
      }, 150);
    });
    const { url: upstreamUrl } = await listenLocal(upstream);
    const p = await startProgram([process.execPath, ...(await cliArgs()), 'start'], {
      UPSTREAM_URL: upstreamUrl,
      PLANS_FILE: roomyPlans(),
      TRUST_PROXY: '127.0.0.1',
      DRAIN_TIMEOUT_MS: '8000',
    });
    children.push(p.child);

    // 40 kept-alive connections, each sending requests back to back until the program is gone.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 40 });
    const answered = new Map<number, WholeAnswer>();
    let next = 0;
    let signalled = false;
    let afterSignal = 0;
    let stop = false;
    const one = (n: number) =>
      requestWhole({
        host: '127.0.0.1',
        port: p.port,
        agent,
        path: `/v2/workspaces/100/accounts?n=${n}`,
        headers: {
          authorization: `Bearer ${KEY}`,
          'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        },
      }).then(
        (answer) => void answered.set(n, answer),
        () => void (stop = stop || signalled),
      );
    const worker = async () => {
      while (!stop) {
        const n = next++;
        if (signalled) afterSignal++;
        await one(n);
      }
    };
    const workers = Array.from({ length: 40 }, worker);
    while (reached.size < 200) await new Promise((r) => setTimeout(r, 20));
    const exited = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
    const sentBeforeSignal = next;
    signalled = true;
    p.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    stop = true;
    await Promise.all(workers);
    agent.destroy();
    upstream.closeAllConnections();
    upstream.close();

    // Zero lost: the upstream did the work of each of these, so each client got the whole answer.
    const lost = [...reached].filter((n) => !answered.get(n)?.complete);
    expect(lost).toEqual([]);
    // After the signal at most one request per connection is taken, and each answer closes it.
    const late = [...answered.entries()].filter(([n]) => n >= sentBeforeSignal);
    for (const [, a] of late) expect(a.connection).toBe('close');
    expect(late.length).toBeLessThanOrEqual(40);
    expect(afterSignal).toBeGreaterThan(0);
  }, 90_000);

  it('`npm start` passes SIGTERM to the program: the port is free again and npm exits', async () => {
    // npm start opens the admin API on 8090 unless told otherwise: a port of its own, not one another
    // keygate on this machine may hold.
    const p = await startProgram(['npm', 'start', '--silent'], { ADMIN_API_PORT: String(await freePort()) });
    children.push(p.child);
    const exited = new Promise<number | null>((r) =>
      p.child.once('exit', (code, signal) => r(code ?? (signal ? -1 : null))),
    );
    p.child.kill('SIGTERM');
    await exited;
    const deadline = Date.now() + 10_000;
    let listening = await status(`http://127.0.0.1:${p.admin}/healthz`);
    while (listening !== 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      listening = await status(`http://127.0.0.1:${p.admin}/healthz`);
    }
    expect(listening).toBe(0);
  }, 90_000);
});
