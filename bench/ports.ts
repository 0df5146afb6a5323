// Loopback ports for the processes a bench run starts (bench/procs.ts freePort: the backend suite, the hop
// suite, bench/diagnostics/builds-ab.ts). A port is handed out only once per allocator and only when
// nothing listens on it at that moment. It is drawn from a band below Linux's ephemeral range
// (32768-60999), where a client connection's own local port cannot take it between the pick and the
// child's bind (the hop suite's load opens 50 connections per window; the other engineers' tests on the
// machine open many more). builds-ab.ts used to count up from a random port in 40000-60000, inside that
// range, without checking: with six keygate targets one did not start (bench/RESULTS.md, 2026-11-26).
import net from 'node:net';

/** Whether 127.0.0.1:port can be listened on right now. */
export function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Whatever port the system gives to a listen on port 0 (in the ephemeral range). */
export async function systemPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

export interface PortAllocatorOptions {
  /** First port of the band (10000). */
  base?: number;
  /** Ports in the band (2000): the bench's band, below the test helpers' 12000-31999. */
  size?: number;
  /** Random picks in the band before falling back to the system's port (50). */
  attempts?: number;
  /** Injected by the unit tests. */
  canListen?: (port: number) => Promise<boolean>;
  random?: () => number;
  fallback?: () => Promise<number>;
}

export interface PortAllocator {
  /** A port nothing listens on and that this allocator has not handed out before. */
  next(): Promise<number>;
  readonly handedOut: ReadonlySet<number>;
}

export function portAllocator(o: PortAllocatorOptions = {}): PortAllocator {
  const base = o.base ?? 10_000;
  const size = o.size ?? 2_000;
  const attempts = o.attempts ?? 50;
  const free = o.canListen ?? canListen;
  const random = o.random ?? Math.random;
  const fallback = o.fallback ?? systemPort;
  const handedOut = new Set<number>();
  return {
    handedOut,
    async next() {
      for (let i = 0; i < attempts; i++) {
        const port = base + Math.floor(random() * size);
        if (handedOut.has(port) || !(await free(port))) continue;
        handedOut.add(port);
        return port;
      }
      // The band is crowded: the system's choice, still never one handed out already.
      for (let i = 0; i < attempts; i++) {
        const port = await fallback();
        if (handedOut.has(port)) continue;
        handedOut.add(port);
        return port;
      }
      throw new Error(`no free loopback port after ${2 * attempts} attempts`);
    },
  };
}
