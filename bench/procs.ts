// Starting and stopping what the bench runs: forked bench/child.ts processes, a private redis-server,
// nginx. Everything started here is stopped by the same object, by its own pid.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, rmSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ChildConfig, FromChild, ToChild } from './protocol.js';
import { portAllocator } from './ports.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where compileForBench() puts the compiled JavaScript (git-ignored). */
const BUILD = join(ROOT, 'bench', '.build');
let compiled = false;

/**
 * Compile src/ and bench/ to JavaScript once per run, so the processes under test run as in production
 * (node on compiled files, as the Docker image does) and not under the tsx loader, which alone adds
 * about 70 MB of RSS and its own start-up work.
 */
export function compileForBench(): void {
  rmSync(BUILD, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.json'), '--outDir', BUILD],
    { stdio: 'inherit' },
  );
  cpSync(join(ROOT, 'src', 'db', 'migrations'), join(BUILD, 'src', 'db', 'migrations'), { recursive: true });
  compiled = true;
}

export interface Child {
  name: string;
  pid: number;
  url: string;
  ask<C extends FromChild['cmd']>(m: ToChild, reply: C): Promise<Extract<FromChild, { cmd: C }>>;
  stop(): Promise<void>;
}

export async function startChild(cfg: ChildConfig, timeoutMs = 120_000): Promise<Child> {
  const out = openSync(cfg.logFile, 'a');
  const child = compiled ? join(BUILD, 'bench', 'child.js') : fileURLToPath(new URL('./child.ts', import.meta.url));
  const cp = fork(child, [], {
    execArgv: [
      ...(process.env.BENCH_NODE_FLAGS && cfg.role !== 'backend' ? process.env.BENCH_NODE_FLAGS.split(' ') : []),
      ...(compiled ? [] : ['--import', 'tsx']),
    ],
    env: { ...process.env, BENCH_CHILD: JSON.stringify(cfg) },
    stdio: ['ignore', out, out, 'ipc'],
  });
  closeSync(out);
  const ready = await new Promise<Extract<FromChild, { cmd: 'ready' }>>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${cfg.name} did not start within ${timeoutMs} ms (log: ${cfg.logFile})`)),
      timeoutMs,
    );
    cp.on('message', (m: FromChild) => {
      if (m.cmd === 'ready') {
        clearTimeout(timer);
        resolve(m);
      } else if (m.cmd === 'failed') {
        clearTimeout(timer);
        reject(new Error(`${cfg.name} failed to start: ${m.error}`));
      }
    });
    cp.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${cfg.name} exited with ${code} before it was ready (log: ${cfg.logFile})`));
    });
  });
  return {
    name: cfg.name,
    pid: cp.pid!,
    url: ready.url,
    ask(m, reply) {
      return new Promise((resolve, reject) => {
        const onMsg = (r: FromChild) => {
          if (r.cmd === reply) {
            cp.off('message', onMsg);
            resolve(r as never);
          }
        };
        cp.on('message', onMsg);
        if (!cp.send(m)) reject(new Error(`${cfg.name}: IPC closed`));
      });
    },
    stop: () => stopProcess(cp, () => cp.send({ cmd: 'stop' } satisfies ToChild)),
  };
}

/** Ask politely, then SIGTERM, then SIGKILL: only this process, by its pid. */
async function stopProcess(cp: ChildProcess, polite: () => void, graceMs = 5_000): Promise<void> {
  if (cp.exitCode !== null || cp.signalCode !== null) return;
  const exited = once(cp, 'exit');
  try {
    polite();
  } catch {
    cp.kill('SIGTERM');
  }
  const t1 = setTimeout(() => cp.kill('SIGTERM'), graceMs);
  const t2 = setTimeout(() => cp.kill('SIGKILL'), graceMs * 2);
  await exited;
  clearTimeout(t1);
  clearTimeout(t2);
}

const ports = portAllocator();
/** A loopback port for a process the bench starts: checked free, and never handed out twice (bench/ports.ts). */
export const freePort = (): Promise<number> => ports.next();

export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Spawned {
  pid: number;
  stop(): Promise<void>;
}

/** A program of the machine (redis-server, nginx), stopped with SIGTERM then SIGKILL. */
export function spawnProgram(cmd: string, args: string[], logFile: string): Spawned {
  const out = openSync(logFile, 'a');
  const cp = spawn(cmd, args, { stdio: ['ignore', out, out] });
  closeSync(out);
  cp.on('error', () => {});
  return { pid: cp.pid ?? -1, stop: () => stopProcess(cp, () => cp.kill('SIGTERM')) };
}

/** Whether an executable is on PATH. */
export async function which(cmd: string): Promise<string | null> {
  const cp = spawn('sh', ['-c', `command -v ${cmd}`], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  cp.stdout.on('data', (d) => (out += d));
  const [code] = await once(cp, 'exit');
  return code === 0 && out.trim() ? out.trim() : null;
}
