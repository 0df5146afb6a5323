// bench/ports.ts, the loopback ports of the processes a bench run starts (the hop suite, builds-ab.ts):
// never one handed out twice, never one something listens on.
import { describe, it, expect, afterEach } from 'vitest';
import net from 'node:net';
import { canListen, portAllocator } from '../../bench/ports.js';

const servers: net.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});
const listenOn = (port: number) =>
  new Promise<void>((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => (servers.push(s), resolve()));
  });
const yes = async () => true;

describe('portAllocator', () => {
  it('never hands out a port twice, even when the draws repeat', async () => {
    // Every draw is the band's first port: the second call must not return it again.
    const fallback = [20_000, 20_000, 20_001];
    const a = portAllocator({
      base: 20_000,
      size: 10,
      attempts: 5,
      canListen: yes,
      random: () => 0,
      fallback: async () => fallback.shift()!,
    });
    expect(await a.next()).toBe(20_000);
    expect(await a.next()).toBe(20_001); // 5 draws of 20000 refused, then the fallback's 20000 refused too
    expect([...a.handedOut]).toEqual([20_000, 20_001]);
  });

  it('hands out the ports of a band one by one until it is used up, then throws', async () => {
    let i = 0;
    const draws = [0, 0.5, 0, 0.5, 0.9]; // ports 30000, 30001, then repeats
    const a = portAllocator({
      base: 30_000,
      size: 2,
      attempts: 5,
      canListen: yes,
      random: () => draws[i++ % draws.length],
      fallback: async () => 30_000,
    });
    expect(new Set([await a.next(), await a.next()])).toEqual(new Set([30_000, 30_001]));
    await expect(a.next()).rejects.toThrow(/no free loopback port after 10 attempts/);
  });

  it('skips a port something listens on (a real listener on loopback)', async () => {
    const base = 10_000 + Math.floor(Math.random() * 1_000) * 2;
    // Of a band of two ports, hold the first; find a pair where both are free to begin with.
    let b = base;
    while (!((await canListen(b)) && (await canListen(b + 1)))) b += 2;
    await listenOn(b);
    expect(await canListen(b)).toBe(false);
    let draw = 0;
    const a = portAllocator({ base: b, size: 2, attempts: 4, random: () => (draw++ % 2 ? 0.5 : 0) });
    expect(await a.next()).toBe(b + 1);
    // The band is used up (one taken, one handed out): the system's choice, in the ephemeral range.
    const third = await a.next();
    expect(third).not.toBe(b);
    expect(third).not.toBe(b + 1);
    expect(third).toBeGreaterThanOrEqual(1024);
  });
});
