// The real program as a child process, seen from outside: its readiness, and whole answers.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { cliArgs } from './cli-program.js';

/** The HTTP status of `url`, or 0 when nothing answers. */
export async function status(url: string): Promise<number> {
  try {
    return (await fetch(url)).status;
  } catch {
    return 0;
  }
}

/**
 * Wait until the program's /readyz answers 200; fails with its output if it exits or takes too long,
 * and then stops it: the caller has no handle to stop it with, and a child left running keeps its ports
 * and its CPU from every later test. SIGTERM first, which `npm start` passes on to the program it runs.
 */
export async function untilReady(
  readyzUrl: string,
  child: ChildProcess,
  output: () => string,
  ms = 60_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await status(readyzUrl)) !== 200) {
    if (Date.now() > deadline || child.exitCode !== null) {
      stop(child);
      throw new Error(`did not start: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM, then SIGKILL if it is still running 5 seconds later. */
function stop(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }, 5_000).unref();
}

export interface WholeAnswer {
  status: number;
  /** The body arrived in full and is JSON. */
  complete: boolean;
  connection?: string;
}

/** One request; resolves with its status and whether the body arrived whole, or rejects on a socket error. */
export function requestWhole(options: http.RequestOptions): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(options, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        let complete = res.complete;
        try {
          JSON.parse(body);
        } catch {
          complete = false;
        }
        resolve({ status: res.statusCode ?? 0, complete, connection: res.headers.connection });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface Program {
  child: ChildProcess;
  /** Everything the program wrote so far, stdout and stderr. */
  output(): string;
}

/**
 * `node [nodeArgs] <the program> start` (test/helpers/cli-program.ts) on in-memory stores (DATABASE_URL
 * and REDIS_URL of the test's own environment removed), with `env` on top; resolves once its admin port's /readyz says 200.
 */
export async function startProgram(
  env: Record<string, string>,
  nodeArgs: string[] = [],
  readyMs = 60_000,
): Promise<Program> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.REDIS_URL;
  const child = spawn(process.execPath, [...nodeArgs, ...(await cliArgs()), 'start'], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const output = () => out;
  await untilReady(`http://127.0.0.1:${env.ADMIN_PORT}/readyz`, child, output, readyMs);
  return { child, output };
}
