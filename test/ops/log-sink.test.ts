// The log output (src/ops/log-sink.ts): lines in order and whole, one write per chunk, at most one
// write under way, a bound on what waits for a slow reader, and what is lost said in a line.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogSink, logLinesDropped, type SinkIo } from '../../src/ops/log-sink.js';
import { createMetrics } from '../../src/ops/metrics.js';

interface Call {
  fd: number;
  text: string;
  done: (err: NodeJS.ErrnoException | null, written: number) => void;
}

/** Writes that wait until the test completes them. */
class HeldIo implements SinkIo {
  calls: Call[] = [];
  synced: string[] = [];
  syncFails: NodeJS.ErrnoException | null = null;
  write(fd: number, buf: Buffer, offset: number, length: number, done: Call['done']): void {
    this.calls.push({ fd, text: buf.toString('utf8', offset, offset + length), done });
  }
  writeSync(fd: number, buf: Buffer, offset: number, length: number): number {
    if (this.syncFails && fd === 1) throw this.syncFails;
    this.synced.push(buf.toString('utf8', offset, offset + length));
    return length;
  }
  /** Completes the latest write, whole or `n` bytes of it. */
  complete(n?: number): void {
    const c = this.calls[this.calls.length - 1];
    c.done(null, n ?? Buffer.byteLength(c.text));
  }
  fail(code: string): void {
    this.calls[this.calls.length - 1].done(Object.assign(new Error(code), { code }), 0);
  }
  /** Completes every write as it comes, until none is left. */
  drain(): void {
    let seen = -1;
    while (this.calls.length !== seen) {
      seen = this.calls.length;
      this.complete();
    }
  }
  written(fd = 1): string {
    return this.calls
      .filter((c) => c.fd === fd)
      .map((c) => c.text)
      .join('');
  }
}

/** 33 bytes for n under 100. */
const line = (n: number) => `{"n":"${String(n).padStart(2, '0')}","p":"${'x'.repeat(15)}"}\n`;

afterEach(() => {
  vi.useRealTimers();
});

describe('LogSink', () => {
  it('hands lines over in order, a chunk per write, one write at a time, never splitting a line', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io, chunkBytes: 100 });
    const lines = Array.from({ length: 10 }, (_, n) => line(n)); // three to a chunk
    for (const l of lines) sink.write(l);
    expect(io.calls).toHaveLength(1); // the others wait for it
    expect(io.calls[0].text).toBe(lines.slice(0, 3).join(''));
    io.complete();
    expect(io.calls).toHaveLength(2);
    io.drain();
    sink.flush();
    io.drain();
    expect(io.written()).toBe(lines.join(''));
    for (const c of io.calls) expect(c.text.endsWith('\n')).toBe(true);
  });

  it('a line waits at most flushMs before it is handed over', () => {
    vi.useFakeTimers();
    const io = new HeldIo();
    const sink = new LogSink(1, { io, flushMs: 25 });
    sink.write(line(1));
    vi.advanceTimersByTime(24);
    expect(io.calls).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(io.written()).toBe(line(1));
  });

  it('a partial write goes on from where it stopped', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io });
    sink.write(line(1));
    sink.write(line(2));
    sink.flush();
    io.complete(10);
    expect(io.calls).toHaveLength(2);
    io.complete();
    expect(io.calls[1].text).toBe((line(1) + line(2)).slice(10));
  });

  it('a descriptor that is not ready (EAGAIN) is tried again after a pause, nothing lost', () => {
    vi.useFakeTimers();
    const io = new HeldIo();
    const sink = new LogSink(1, { io });
    sink.write(line(1));
    sink.flush();
    io.fail('EAGAIN');
    expect(io.calls).toHaveLength(1);
    vi.advanceTimersByTime(10);
    expect(io.calls).toHaveLength(2);
    expect(io.calls[1].text).toBe(line(1));
    expect(sink.dropped).toBe(0);
  });

  it('keeps at most maxQueuedBytes for a reader that stalls, counts what it drops, and says so once it moves', () => {
    const io = new HeldIo();
    const before = logLinesDropped();
    const sink = new LogSink(1, {
      io,
      chunkBytes: 100,
      maxQueuedBytes: 300,
      dropNotice: (n) => `{"dropped":${n}}\n`,
    });
    const lines = Array.from({ length: 40 }, (_, n) => line(n));
    for (const l of lines) sink.write(l);
    // Three chunks of three lines (297 bytes) were under the bound; the thirteenth line sealed a
    // fourth and began a fifth; the rest were dropped.
    expect(sink.dropped).toBe(27);
    expect(logLinesDropped() - before).toBe(27);
    io.drain();
    sink.flush();
    io.drain();
    const out = io.written();
    // The notice goes where the loss began.
    expect(out).toBe(lines.slice(0, 13).join('') + `{"dropped":27}\n`);
  });

  it('the process-wide count of dropped lines is exported as keygate_log_lines_dropped_total', async () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io, chunkBytes: 40, maxQueuedBytes: 1 });
    for (let n = 0; n < 5; n++) sink.write(line(n));
    expect(sink.dropped).toBeGreaterThan(0);
    const text = await createMetrics().registry.metrics();
    expect(text).toContain(`keygate_log_lines_dropped_total ${logLinesDropped()}\n`);
  });

  it('a descriptor that fails for good (EPIPE) is reported once on stderr; later lines are dropped, nothing throws', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io });
    sink.write(line(1));
    sink.flush();
    io.fail('EPIPE');
    expect(io.synced).toEqual(['keygate: log output failed (EPIPE); further log lines are dropped\n']);
    expect(() => sink.write(line(2))).not.toThrow();
    sink.flushSync();
    expect(sink.dropped).toBe(2);
    expect(io.calls).toHaveLength(1);
  });

  it('multi-byte characters at a chunk edge stay whole, and a line longer than a chunk is written whole in its place', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io, chunkBytes: 64 });
    const texts = [
      '{"s":"' + 'é'.repeat(12) + '"}\n',
      '{"s":"' + '😀'.repeat(9) + '"}\n',
      `{"long":"${'y'.repeat(150)}"}\n`,
      line(3),
    ];
    for (const t of texts) sink.write(t);
    sink.flush();
    io.drain();
    expect(io.written()).toBe(texts.join(''));
    for (const c of io.calls) expect(c.text.endsWith('\n')).toBe(true);
    expect(io.calls.some((c) => c.text.includes('\ufffd'))).toBe(false);
  });

  it('flush calls back once everything so far is written', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io });
    const done = vi.fn();
    sink.write(line(1));
    sink.flush(done);
    expect(done).not.toHaveBeenCalled();
    io.complete();
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('at exit, writes what waits and leaves the write under way to the thread pool', () => {
    const io = new HeldIo();
    const sink = new LogSink(1, { io, chunkBytes: 70 });
    for (let n = 0; n < 6; n++) sink.write(line(n));
    expect(io.calls).toHaveLength(1);
    sink.flushSync();
    expect(io.calls[0].text).toBe(line(0) + line(1));
    expect(io.synced.join('')).toBe([2, 3, 4, 5].map((n) => line(n)).join(''));
  });

  it('at exit, a reader stalled for over a second is not waited for', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const io = new HeldIo();
    const sink = new LogSink(1, { io, chunkBytes: 70 });
    for (let n = 0; n < 6; n++) sink.write(line(n));
    vi.advanceTimersByTime(1_001);
    sink.flushSync();
    expect(io.synced).toEqual([]);
  });
});

describe('the process log output against a reader that stops reading', () => {
  it('stays bounded, drops rather than holds, and every line is either delivered in order or counted', async () => {
    const LOGGER = fileURLToPath(new URL('../../src/ops/logger.ts', import.meta.url));
    const ROOT = fileURLToPath(new URL('../../', import.meta.url));
    // 60,000 lines of about 200 bytes (12 MB, three times the sink's bound) while nobody reads, then
    // the memory it holds; then it waits for the reader to come back and exits once its log is out.
    const program = `
      const { createLogger } = await import(${JSON.stringify(LOGGER)});
      const log = createLogger('info');
      const pad = 'p'.repeat(120);
      let n = 0;
      const burst = () => {
        for (let i = 0; i < 2000 && n < 60000; i++) log.info({ n: n++, pad }, 'line');
        if (n < 60000) return setImmediate(burst);
        const m = process.memoryUsage();
        process.stderr.write(JSON.stringify({ arrayBuffers: m.arrayBuffers }) + '\\n');
        process.stdin.once('data', () => log.flush(() => process.exit(0)));
      };
      burst();`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdout.pause();
    let err = '';
    const report = await new Promise<{ arrayBuffers: number }>((resolve, reject) => {
      child.on('exit', (code) => reject(new Error(`child exited ${code}: ${err}`)));
      child.stderr.on('data', (d: Buffer) => {
        err += d;
        const nl = err.indexOf('\n');
        if (nl !== -1) resolve(JSON.parse(err.slice(0, nl)) as { arrayBuffers: number });
      });
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => void (out += d));
    child.stdout.resume();
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.stdin.write('go\n');
    expect(await exited).toBe(0);
    // The bound (4 MiB of chunks) and a chunk or two around it, not the 12 MB logged.
    expect(report.arrayBuffers).toBeLessThan(8 * 1024 * 1024);
    const parsed = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { n?: number; dropped?: number; msg: string });
    const delivered = parsed.filter((l) => l.msg === 'line').map((l) => l.n!);
    const dropped = parsed.filter((l) => l.dropped !== undefined).reduce((a, l) => a + l.dropped!, 0);
    expect(dropped).toBeGreaterThan(0);
    expect(delivered.length + dropped).toBe(60_000);
    for (let i = 1; i < delivered.length; i++) expect(delivered[i]).toBeGreaterThan(delivered[i - 1]);
    const notice = parsed.find((l) => l.dropped !== undefined)!;
    expect(notice.msg).toBe('log lines dropped: the log output did not keep up');
  }, 60_000);
});

describe('several processes on one stdout (the workers of WORKERS > 1)', () => {
  it('with a shared output every line arrives whole, however slowly the pipe is read', async () => {
    const LOGGER = fileURLToPath(new URL('../../src/ops/logger.ts', import.meta.url));
    const ROOT = fileURLToPath(new URL('../../', import.meta.url));
    // Each writer logs 20,000 lines of about 350 bytes as fast as it can, then exits once they are out.
    const file = join(mkdtempSync(join(tmpdir(), 'keygate-shared-')), 'writer.mjs');
    writeFileSync(
      file,
      `const { createLogger } = await import(${JSON.stringify(LOGGER)});
      const log = createLogger('info', undefined, { shared: true });
      const pad = 'p'.repeat(280);
      let n = 0;
      const burst = () => {
        for (let i = 0; i < 500 && n < 20000; i++) log.info({ w: process.env.W, n: n++, pad }, 'line');
        if (n < 20000) return setImmediate(burst);
        log.flush(() => process.exit(0));
      };
      burst();`,
    );
    const node = (w: string) => `W=${w} "${process.execPath}" --import tsx "${file}"`;
    const child = spawn('sh', ['-c', `${node('a')} & ${node('b')} & wait`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => void (err += d));
    let rest = '';
    let torn = 0;
    const seen: Record<string, number> = { a: 0, b: 0 };
    let dropped = 0;
    child.stdout.on('data', (d: Buffer) => {
      rest += d;
      let nl;
      while ((nl = rest.indexOf('\n')) !== -1) {
        const text = rest.slice(0, nl);
        rest = rest.slice(nl + 1);
        try {
          const l = JSON.parse(text) as { w?: string; dropped?: number };
          if (l.dropped !== undefined) dropped += l.dropped;
          else seen[l.w!]++;
        } catch {
          torn++;
        }
      }
      // A reader slower than the writers: the pipe fills and stays nearly full.
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 1);
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(torn).toBe(0);
    expect(seen.a + seen.b + dropped).toBe(40_000);
  }, 60_000);
});
