// Diagnostic (docs/limits.md, Monthly quotas): the gateway's CPU per gated request in the standalone
// gate batcher (src/limits/redis/gate.ts) with the months' checkpoint and without, on a Redis stand-in
// that answers at once (so only the gateway's own work is timed), for requests of an organization
// without a quota and with one. Rounds alternate the variants; prints the median ns per request.
// Run: npx tsx bench/diagnostics/month-floor-cost.ts [requests per round=100000] [rounds=31]
import type { Redis } from 'ioredis';
import { createGateBatcher } from '../../src/limits/redis/gate.js';
import { MonthCheckpoint } from '../../src/limits/month-checkpoint.js';
import { monthStart, type GateRequest } from '../../src/limits/types.js';
import { systemClock } from '../../src/ops/clock.js';

const N = Number(process.argv[2] ?? 100_000);
const ROUNDS = Number(process.argv[3] ?? 31);
const BATCH = 16;

// Answers each request of a batch with its counts (1 per counter), as the script would.
const fakeRedis = {
  defineCommand() {},
  async keygateGate(_now: number, _ttl: number, fields: string) {
    const lines: string[] = [];
    let at = 0;
    const f = fields.split('\n');
    while (at < f.length - 1) {
      const op = Number(f[at + 1]);
      const month = op > 100;
      const nc = month ? op - 100 : Math.abs(op);
      lines.push('s' + ' 1'.repeat(nc));
      at += 4 + nc + (month ? nc + 1 : 0);
    }
    return lines.join('\n');
  },
} as unknown as Redis;

const keys = {
  counter: (id: string, start: number) => `kg:rl:{${id}}:${start}`,
  cooldown: (ip: string) => `kg:af:{${ip}}:cooldown`,
  version: (org: number) => `kg:av:{${org}}`,
  latestCooldown: 'kg:af:{cooldowns}:latest',
};
const db = { query: async () => [] };

async function round(withFloors: boolean, quota: boolean): Promise<number> {
  const month = withFloors ? new MonthCheckpoint(db, systemClock, 60_000) : undefined;
  if (month) await month.load(['m:7'], monthStart(Date.now()));
  const gate = createGateBatcher({ redis: fakeRedis, clock: systemClock, keys, ttlSlackMs: 5000, month });
  const req = (n: number): GateRequest => ({
    ip: `10.0.${n % 250}.1`,
    orgId: 7,
    version: 0,
    spend: quota
      ? [
          { id: 'k:70:read', limit: 1e9 },
          { id: `ip:10.0.${n % 250}.1`, limit: 100 },
          { id: 'm:7', limit: 1e12, month: true },
        ]
      : [
          { id: 'k:70:read', limit: 1e9 },
          { id: `ip:10.0.${n % 250}.1`, limit: 100 },
        ],
  });
  const t0 = process.hrtime.bigint();
  for (let n = 0; n < N; n += BATCH) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < BATCH; i++) batch.push(gate(req(n + i)));
    await Promise.all(batch);
  }
  return Number(process.hrtime.bigint() - t0) / N;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const quota of [false, true]) {
  const times: Record<string, number[]> = { without: [], with: [] };
  await round(false, quota); // warm-up
  await round(true, quota);
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 ? [true, false] : [false, true];
    for (const withFloors of order) times[withFloors ? 'with' : 'without'].push(await round(withFloors, quota));
  }
  const ratios = times.with.map((t, i) => t / times.without[i]);
  // The machine is shared: the median of the rounds' ratios (each pair run back to back), and their spread.
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `${quota ? 'with a quota   ' : 'without a quota'}: ${median(times.without).toFixed(0)} ns without the checkpoint, ${median(times.with).toFixed(0)} ns with it; with / without per round: median ${median(ratios).toFixed(3)}, quartiles ${sorted[Math.floor(sorted.length / 4)].toFixed(2)}-${sorted[Math.floor((3 * sorted.length) / 4)].toFixed(2)} over ${ratios.length} rounds`,
  );
}
