// The process's log output when no destination is given: JSON lines gathered into chunks and written
// to a file descriptor (stdout) one chunk at a time, off the event loop (libuv's thread pool), as
// nginx's `access_log ... buffer= flush=` writes its log.
//
// pino's own asynchronous destination (sonic-boom) measured the byte length of its pending string on
// every write, flattened and encoded each batch again for the write, and a third time to account for
// what was written (a Buffer made of the whole string in its release), and woke a thread-pool thread
// per 16 KB: the access log cost a request about 3 µs, against about 1.3 µs now (bench/RESULTS.md,
// `5989b6f`). Here a line is encoded once, straight into the chunk's bytes, and a chunk is 64 KiB.
//
// Bounded: at most `maxQueuedBytes` wait for the descriptor. When its reader does not keep up (a
// stalled pipe), further lines are counted and dropped instead of held, and once the output moves
// again a line says how many were lost. Answering requests never waits for the log. A descriptor that
// fails for good (EPIPE: the reader is gone) is reported once on stderr; lines are then dropped.
import fs from 'node:fs';

/** The two writes the sink makes (node:fs's; tests inject their own). */
export interface SinkIo {
  write(
    fd: number,
    buf: Buffer,
    offset: number,
    length: number,
    done: (err: NodeJS.ErrnoException | null, written: number) => void,
  ): void;
  writeSync(fd: number, buf: Buffer, offset: number, length: number): number;
}

export interface LogSinkOptions {
  /** A line waits at most this long before its chunk is handed over (25). */
  flushMs?: number;
  /**
   * The size of a chunk: one write each (65,536). Several processes writing to one pipe (the workers
   * of WORKERS > 1 share the primary's stdout) need chunks of at most PIPE_BUF_BYTES: only a write that
   * small is whole on a pipe, where larger ones interleave with the other processes' and cut lines.
   */
  chunkBytes?: number;
  /** Bytes handed over but not yet written at most; past it lines are dropped (4 MiB). */
  maxQueuedBytes?: number;
  io?: SinkIo;
  /** The line written when the output moves again after `dropped` lines were lost. */
  dropNotice?: (dropped: number) => string;
}

interface Chunk {
  buf: Buffer;
  /** Bytes of `buf` that hold lines. */
  len: number;
  /** Bytes already written. */
  off: number;
  lines: number;
}

const NODE_IO: SinkIo = {
  write: (fd, buf, offset, length, done) => fs.write(fd, buf, offset, length, null, done),
  writeSync: (fd, buf, offset, length) => fs.writeSync(fd, buf, offset, length),
};

/** POSIX's PIPE_BUF on Linux: a write of at most this many bytes to a pipe is never interleaved with another. */
export const PIPE_BUF_BYTES = 4096;

/** A descriptor that is not ready (a non-blocking pipe that is full) is tried again after this. */
const RETRY_MS = 10;
/** At exit, a full non-blocking descriptor is waited for this many times RETRY_MS at most. */
const EXIT_RETRIES = 50;

/** At exit, a write under way for longer than this means the reader has stalled: exit does not wait for it. */
const STALLED_MS = 1_000;

/** Sinks with lines to write at exit. */
const live = new Set<LogSink>();
let exitHooked = false;
let droppedInProcess = 0;

/** Log lines every sink of this process dropped (keygate_log_lines_dropped_total). */
export function logLinesDropped(): number {
  return droppedInProcess;
}

export class LogSink {
  private readonly flushMs: number;
  private readonly chunkBytes: number;
  private readonly maxQueuedBytes: number;
  private readonly io: SinkIo;
  private readonly dropNotice: ((dropped: number) => string) | undefined;
  private chunk: Buffer;
  private used = 0;
  private lines = 0;
  /** Chunks handed over, oldest first; the first is being written while `writing`. */
  private readonly queue: Chunk[] = [];
  private queuedBytes = 0;
  private writing = false;
  /** When the oldest chunk's writing began (its first try, refused ones included), performance.now(); null between chunks. */
  private writingSince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly spare: Buffer[] = [];
  private failed: NodeJS.ErrnoException | null = null;
  private waiters: Array<(err?: Error) => void> = [];
  /** Lines dropped since the last notice. */
  private unreported = 0;
  /** Lines dropped over the sink's life. */
  dropped = 0;

  constructor(
    readonly fd: number,
    options: LogSinkOptions = {},
  ) {
    this.flushMs = options.flushMs ?? 25;
    this.chunkBytes = options.chunkBytes ?? 65_536;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 4 * 1024 * 1024;
    this.io = options.io ?? NODE_IO;
    this.dropNotice = options.dropNotice;
    this.chunk = Buffer.allocUnsafeSlow(this.chunkBytes);
    live.add(this);
    if (!exitHooked) {
      exitHooked = true;
      process.on('exit', () => {
        for (const sink of live) sink.flushSync();
      });
    }
  }

  /** One or more whole lines (pino writes one per call). Never blocks, never throws. */
  write(text: string): boolean {
    if (this.failed !== null || this.queuedBytes >= this.maxQueuedBytes) {
      this.drop(1);
      return true;
    }
    // A UTF-16 unit takes at most 3 bytes in UTF-8: only a line near the chunk's end is measured.
    if (text.length * 3 > this.chunkBytes - this.used) {
      const bytes = Buffer.byteLength(text);
      if (bytes > this.chunkBytes - this.used) this.seal();
      if (bytes > this.chunkBytes) {
        // Longer than a chunk: handed over on its own.
        const own = Buffer.from(text);
        this.enqueue({ buf: own, len: own.length, off: 0, lines: 1 });
        return true;
      }
    }
    if (this.used === 0 && this.timer === null) {
      this.timer = setTimeout(this.onTimer, this.flushMs);
      this.timer.unref();
    }
    this.used += this.chunk.write(text, this.used);
    this.lines++;
    return true;
  }

  /** Calls `done` once every line written so far is written out (or could not be). */
  flush(done: (err?: Error) => void = () => {}): void {
    this.seal();
    if (this.queue.length === 0 || this.failed !== null) return done(this.failed ?? undefined);
    this.waiters.push(done);
  }

  /**
   * Writes what waits, synchronously (at exit). A chunk whose write is under way is left to it: the
   * thread pool holds it, and writing it again here could repeat its lines. When that write has been
   * under way for a second, the reader has stalled and nothing more is tried: exit does not hang on it.
   */
  flushSync(): void {
    this.seal();
    if (this.failed !== null) return;
    if (this.writingSince !== null && performance.now() - this.writingSince > STALLED_MS) return;
    const first = this.writing ? 1 : 0;
    let retries = 0;
    for (let i = first; i < this.queue.length; i++) {
      const c = this.queue[i];
      while (c.off < c.len) {
        try {
          c.off += this.io.writeSync(this.fd, c.buf, c.off, c.len - c.off);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EAGAIN' && retries++ < EXIT_RETRIES) {
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
            continue;
          }
          this.fail(err as NodeJS.ErrnoException);
          return;
        }
      }
    }
    for (const c of this.queue.splice(first)) this.queuedBytes -= c.len - c.off;
  }

  private readonly onTimer = () => {
    this.timer = null;
    this.seal();
  };

  /** Hands the current chunk over. */
  private seal(): void {
    if (this.used === 0) return;
    const c: Chunk = { buf: this.chunk, len: this.used, off: 0, lines: this.lines };
    this.chunk = this.spare.pop() ?? Buffer.allocUnsafeSlow(this.chunkBytes);
    this.used = 0;
    this.lines = 0;
    this.enqueue(c);
  }

  private enqueue(c: Chunk): void {
    this.queue.push(c);
    this.queuedBytes += c.len;
    this.pump();
  }

  private pump(): void {
    if (this.writing || this.queue.length === 0 || this.failed !== null) return;
    const c = this.queue[0];
    this.writingSince ??= performance.now();
    this.writing = true;
    this.io.write(this.fd, c.buf, c.off, c.len - c.off, this.written);
  }

  private readonly written = (err: NodeJS.ErrnoException | null, n: number) => {
    this.writing = false;
    if (err) {
      // Not unref'd: a process that ends on its own waits for its log to go out, as one writing
      // synchronously would (one that calls exit writes what waits in flushSync).
      if (err.code === 'EAGAIN') {
        setTimeout(() => this.pump(), RETRY_MS);
        return;
      }
      return this.fail(err);
    }
    const c = this.queue[0];
    c.off += n;
    this.queuedBytes -= n;
    if (n > 0) this.writingSince = null;
    if (c.off < c.len) return this.pump();
    this.queue.shift();
    if (c.buf.length === this.chunkBytes && this.spare.length < 2) this.spare.push(c.buf);
    if (this.unreported > 0 && this.queuedBytes < this.maxQueuedBytes / 2) {
      const lost = this.unreported;
      this.unreported = 0;
      if (this.dropNotice) this.write(this.dropNotice(lost));
    }
    if (this.queue.length === 0) this.settle();
    this.pump();
  };

  private drop(lines: number): void {
    droppedInProcess += lines;
    this.dropped += lines;
    this.unreported += lines;
  }

  private fail(err: NodeJS.ErrnoException): void {
    if (this.failed !== null) return;
    this.failed = err;
    let lost = this.lines;
    for (const c of this.queue) lost += c.lines;
    this.drop(lost);
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.used = 0;
    this.lines = 0;
    live.delete(this);
    try {
      const note = Buffer.from(
        `keygate: log output failed (${err.code ?? err.message}); further log lines are dropped\n`,
      );
      this.io.writeSync(2, note, 0, note.length);
    } catch {
      // stderr is gone too: nothing is left to tell.
    }
    this.settle();
  }

  private settle(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w(this.failed ?? undefined);
  }
}
