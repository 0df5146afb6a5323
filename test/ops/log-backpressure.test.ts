// The real program with the access log on, its stdout not read while it answers 30,000 requests: it keeps
// answering, holds a bounded backlog of log lines (src/ops/log-sink.ts: 4 MiB) and drops the rest, and
// once stdout is read again every request is either logged, in order, or counted in a line that says so.
import { beforeAll, describe, expect, it } from 'vitest';
import { forwardingPrograms, loadTags } from '../helpers/forwarding.js';
import type { Program } from '../helpers/program.js';

const REQUESTS = 30_000;
const start = forwardingPrograms();

describe('a gateway whose stdout nobody reads', () => {
  let program: Program & { port: number };
  beforeAll(async () => {
    program = await start([], { ACCESS_LOG: 'on', LOG_LEVEL: 'info' });
  });

  it('keeps answering, drops log lines past its bound, and accounts for every request once read again', async () => {
    const stdout = program.child.stdout!;
    stdout.pause();
    // stdout alone (the program's output() holds stderr too, interleaved by chunk).
    let text = '';
    stdout.on('data', (d: Buffer) => void (text += d));
    // A client address per request: no address reaches its layer's limit.
    const statuses = await loadTags(program.port, REQUESTS, {
      connections: 32,
      subnet: '',
      address: (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    });
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    stdout.resume();

    type Line = { msg?: string; requestId?: string; dropped?: number };
    // Whole lines only: the last may still be arriving.
    const read = () =>
      text
        .slice(0, text.lastIndexOf('\n') + 1)
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line);
    const count = () => {
      const lines = read();
      const logged = lines.filter((l) => l.msg === 'request').length;
      const dropped = lines.filter((l) => l.dropped !== undefined).reduce((a, l) => a + l.dropped!, 0);
      return { logged, dropped };
    };
    // The backlog drains and the notice follows within the sink's flush interval of the last write.
    const deadline = Date.now() + 20_000;
    let seen = count();
    while (seen.logged + seen.dropped < REQUESTS && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      seen = count();
    }
    expect(seen.dropped).toBeGreaterThan(0);
    expect(seen.logged + seen.dropped).toBe(REQUESTS);
    const notice = read().find((l) => l.dropped !== undefined)!;
    expect(notice.msg).toBe('log lines dropped: the log output did not keep up');
  }, 120_000);
});
