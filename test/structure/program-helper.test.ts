// The test helper that waits for a child program to be ready: when it gives up, the child is stopped
// with it. A child left running after a start that was only slow (a minute, on a machine running two
// suites) went on holding its ports and taking CPU from every later test and run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis-server.js';
import { untilReady } from '../helpers/program.js';

describe('untilReady', () => {
  it('stops the child it gave up waiting for', async () => {
    const port = await freePort();
    // Alive, and never ready: nothing answers on its port.
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const exited = once(child, 'exit');
    await expect(untilReady(`http://127.0.0.1:${port}/readyz`, child, () => 'no output', 300)).rejects.toThrow(
      /did not start: no output/,
    );
    const [code, signal] = (await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r(['still running', null]), 10_000)),
    ])) as [unknown, unknown];
    child.kill('SIGKILL');
    expect(code === 'still running' ? 'still running' : signal).toBe('SIGTERM');
  });
});
