// The real program as a child process: SIGHUP reloads plans and routes (a bad file is refused and the
// old one stays), SIGTERM drains under load (readiness 503 at once, every accepted request gets a
// full answer, exit 0).
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { requestWhole, startProgram, status } from '../helpers/program.js';
import { listenLocal } from '../helpers/listen.js';

const KEYS = [
  'svc_ws_DemoWorkspaceAdminKey0000000000000001',
  'svc_ws_DemoWorkspaceViewerKey000000000000001',
  'svc_pk_DemoOwnerPersonalKey0000000000000001',
];
let child: ChildProcess;
let output: () => string;
let port: number;
let admin: number;
let slow: http.Server;
let reachedUpstream = 0;
const dir = mkdtempSync(join(tmpdir(), 'kg-proc-'));
const plansFile = join(dir, 'plans.json');

/** One request on its own connection: its status and whether the body arrived whole, or the socket error. */
function get(path: string, key: string): Promise<{ status: number; complete: boolean } | { error: string }> {
  return requestWhole({
    host: '127.0.0.1',
    port,
    path,
    agent: false,
    headers: { authorization: `Bearer ${key}` },
  }).then(
    ({ status: code, complete }) => ({ status: code, complete }),
    (e: NodeJS.ErrnoException) => ({ error: e.code ?? e.message }),
  );
}

beforeAll(async () => {
  copyFileSync('config/plans.json', plansFile);
  // A slow upstream keeps requests in flight when SIGTERM arrives.
  slow = http.createServer((req, res) => {
    reachedUpstream++;
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { path: req.url } }));
    }, 1000);
  });
  const { url: slowUrl } = await listenLocal(slow);
  [port, admin] = [await freePort(), await freePort()];
  ({ child, output } = await startProgram({
    PORT: String(port),
    ADMIN_PORT: String(admin),
    BACKEND_PORT: String(await freePort()),
    HOST: '127.0.0.1',
    DATA_DIR: 'memory://',
    PLANS_FILE: plansFile,
    UPSTREAM_URL: slowUrl,
    DRAIN_TIMEOUT_MS: '5000',
    LOG_LEVEL: 'info',
  }));
}, 90_000);
afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  slow?.closeAllConnections();
  slow?.close();
});

async function readLimit(): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/v2/workspaces/100/rate-limit`, {
    headers: { authorization: `Bearer ${KEYS[0]}` },
  });
  return (await r.json()).data.buckets.read.limit;
}

async function untilLog(text: string) {
  const deadline = Date.now() + 10_000;
  while (!output().includes(text)) {
    if (Date.now() > deadline) throw new Error(`no log line with ${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the running program', () => {
  it('prints the demo keys and a curl line', () => {
    for (const k of KEYS) expect(output()).toContain(k);
    expect(output()).toMatch(/curl -i -H "Authorization: Bearer svc_ws_/);
  });

  it('SIGHUP reloads plans.json; a bad file is refused naming the field and the old one stays', async () => {
    expect(await readLimit()).toBe(20);
    const plans = JSON.parse(readFileSync(plansFile, 'utf8'));
    plans.growth.read = 25;
    writeFileSync(plansFile, JSON.stringify(plans));
    child.kill('SIGHUP');
    await untilLog('configuration reloaded');
    expect(await readLimit()).toBe(25);
    plans.growth.read = -1;
    writeFileSync(plansFile, JSON.stringify(plans));
    child.kill('SIGHUP');
    await untilLog('configuration reload refused');
    expect(output()).toMatch(/growth\.read/);
    expect(await readLimit()).toBe(25);
  });

  it('SIGTERM under load: readiness 503 at once, every accepted request answered in full, exit 0', async () => {
    const before = reachedUpstream;
    const inflight = Array.from({ length: 30 }, (_, i) => get(`/v2/workspaces/100/accounts?i=${i}`, KEYS[i % 3]));
    // Every request was accepted and is now waiting on the slow upstream (1 s).
    while (reachedUpstream < before + 30) await new Promise((r) => setTimeout(r, 10));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    const deadline = Date.now() + 2_000;
    let ready = await status(`http://127.0.0.1:${admin}/readyz`);
    while (ready === 200 && Date.now() < deadline) ready = await status(`http://127.0.0.1:${admin}/readyz`);
    expect(ready).toBe(503);
    const late = await get('/v2/workspaces/100/accounts', KEYS[0]);
    expect(late).toEqual({ error: 'ECONNREFUSED' }); // no longer accepting
    const results = await Promise.all(inflight);
    for (const r of results) expect(r).toEqual({ status: 200, complete: true });
    expect(await exited).toBe(0);
    expect(output()).toContain('shutting down: draining');
  });
});
