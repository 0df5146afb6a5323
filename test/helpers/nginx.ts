// Debian's nginx running deploy/forward-auth/nginx.conf on loopback for a test (bench/forward-auth/
// nginx-conf.ts makes the file runnable): checked with `nginx -t`, started in the foreground in a
// folder of its own, ready once it answers.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeNginxConf, type NginxAddresses } from '../../bench/forward-auth/nginx-conf.js';
import { freePort } from './redis-server.js';

export const NGINX = process.env.NGINX ?? '/usr/sbin/nginx';
export const haveNginx = () => existsSync(NGINX);

export interface RunningNginx {
  url: string;
  /** Its folder: nginx.conf, access.log, error.log. */
  dir: string;
  stop(): Promise<void>;
}

export async function startForwardAuthNginx(a: Omit<NginxAddresses, 'listen'>): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), 'kg-nginx-'));
  // The workers run as nobody when the test runs as root: they write request bodies under `dir`.
  chmodSync(dir, 0o755);
  const listen = await freePort();
  const args = writeNginxConf(dir, { ...a, listen });
  const check = spawnSync(NGINX, ['-t', '-q', ...args.slice(0, 6)], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t refused the config: ${check.stderr}`);
  const nginx = spawn(NGINX, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  nginx.stdout!.on('data', (c) => (out += c));
  nginx.stderr!.on('data', (c) => (out += c));
  const running: RunningNginx = {
    url: `http://127.0.0.1:${listen}`,
    dir,
    async stop() {
      if (nginx.exitCode === null && nginx.signalCode === null) {
        const exited = new Promise((r) => nginx.once('exit', r));
        nginx.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const up = await fetch(`${running.url}/healthz-of-nothing`).then(
      () => true,
      () => false,
    );
    if (up) return running;
    if (Date.now() > deadline || nginx.exitCode !== null) {
      await running.stop();
      throw new Error(`nginx did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
