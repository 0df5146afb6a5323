// A TCP pass-through that behaves like a lossy or partitioned link, for a Redis of the test's own.
// TCP never loses data, it delays it: a lost segment stops the byte stream until it is retransmitted
// (at least 200 ms later on Linux, the minimum retransmission timeout), and everything sent after it
// waits behind it. So "loss" here holds a chunk, and every later chunk in the same direction, for a
// retransmission delay; a partition holds everything, connections open, until healed.
import net from 'node:net';
import { listenLocal } from './listen.js';

export interface LossyLinkOptions {
  /** Share of chunks (each direction) that are "lost" once and arrive after `delayMs`. */
  loss: number;
  /** Retransmission delay of a lost chunk, drawn uniformly from this range (ms). */
  delayMs: [number, number];
}

/** client -> server (the requests) or server -> client (the replies). */
export type LinkDirection = 'toServer' | 'toClient';

export interface LossyProxy {
  port: number;
  /** Chunks held so far (how many "retransmissions" the link made). */
  readonly delayed: number;
  /**
   * "Lose" the next chunk that travels `direction`: it and everything behind it wait `ms`. `then` runs
   * when it is released, just before it is delivered (so a reply it provokes can be held in turn).
   */
  retransmitNext(direction: LinkDirection, ms: number, then?: () => void): void;
  /** Hold every byte from now on, connections open (a silent partition). */
  partition(): void;
  /** Let held and new bytes through again. */
  heal(): void;
  close(): Promise<void>;
}

export async function startLossyProxy(targetPort: number, o: LossyLinkOptions): Promise<LossyProxy> {
  const sockets = new Set<net.Socket>();
  const pipes: { flush(): void }[] = [];
  let partitioned = false;
  let delayed = 0;
  const forced: Record<LinkDirection, { ms: number; then?: () => void } | null> = { toServer: null, toClient: null };

  /** One direction: chunks leave in order, none before `releaseAt`. */
  function pipe(from: net.Socket, to: net.Socket, direction: LinkDirection) {
    const queue: Buffer[] = [];
    let releaseAt = 0;
    let timer: NodeJS.Timeout | undefined;
    // What a forced hold runs at its release, before the held bytes are written.
    let onRelease: (() => void)[] = [];
    const flush = () => {
      timer = undefined;
      if (partitioned) return;
      const wait = releaseAt - performance.now();
      if (wait > 0) {
        timer = setTimeout(flush, wait);
        return;
      }
      const released = onRelease;
      onRelease = [];
      for (const run of released) run();
      while (queue.length > 0) to.write(queue.shift()!);
    };
    /** The hold of a "lost" chunk: its retransmission delay in ms, 0 when it is not lost. */
    const holdOf = (): number => {
      const force = forced[direction];
      if (force) {
        forced[direction] = null;
        if (force.then) onRelease.push(force.then);
        return force.ms;
      }
      if (Math.random() >= o.loss) return 0;
      const [lo, hi] = o.delayMs;
      return lo + Math.random() * (hi - lo);
    };
    from.on('data', (chunk: Buffer) => {
      const hold = holdOf();
      if (hold > 0) {
        delayed++;
        releaseAt = Math.max(releaseAt, performance.now() + hold);
      }
      queue.push(chunk);
      if (timer === undefined) flush();
    });
    pipes.push({ flush: () => timer === undefined && flush() });
  }

  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
      s.on('error', () => {});
    }
    pipe(client, upstream, 'toServer');
    pipe(upstream, client, 'toClient');
  });
  const { port } = await listenLocal(server);
  return {
    port,
    get delayed() {
      return delayed;
    },
    retransmitNext(direction, ms, then) {
      forced[direction] = { ms, then };
    },
    partition: () => void (partitioned = true),
    heal() {
      partitioned = false;
      for (const p of pipes) p.flush();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
