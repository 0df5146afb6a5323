// The usage history's own CPU per request, in this process alone: UsageWriter.record (the gateway's hot
// path: the outcome, one map increment) for requests spread over KEYS keys and a realistic mix of
// outcomes, and a flush's preparation (the minute, hour and day rows built and sorted) per row, into a
// database stand-in that accepts at once (the statement's own cost is the database's). Process CPU
// (process.cpuUsage), the median of ROUNDS rounds of BATCH requests; less moved by a busy machine than
// a gateway under load (./cpu.ts), which it complements.
//   npx tsx bench/usage/record-cost.ts      (KEYS=10000 BATCH=100000 ROUNDS=15 by default)
import { UsageWriter } from '../../src/access/usage/writer.js';
import type { UsageTrace } from '../../src/access/usage/outcome.js';
import type { Db } from '../../src/db/index.js';

const KEYS = Number(process.env.KEYS ?? 10_000);
const BATCH = Number(process.env.BATCH ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 15);

const ROUTE = '/v2/workspaces/{workspaceId}/accounts';
// 90 % forwarded 2xx, then 4xx, a key's limit and an unknown key.
const traces: [UsageTrace, number][] = [];
for (let i = 0; i < 1000; i++) {
  const keyId = 1 + ((i * 7919) % KEYS);
  const t: UsageTrace = { route: ROUTE, code: null, organizationId: 1 + (keyId % 1000), keyId };
  if (i % 10 < 9) traces.push([t, 200]);
  else if (i % 30 === 9) traces.push([t, 404]);
  else if (i % 30 === 19) traces.push([{ ...t, code: '150005', limit: 'key' }, 429]);
  else traces.push([{ route: 'unmatched', code: '150002', organizationId: null, keyId: null }, 401]);
}

let now = Date.UTC(2026, 11, 4, 12);
const clock = { now: () => now };
let rows = 0;
const db = {
  tx: async <T>(fn: (q: { query: (sql: string, p?: unknown[]) => Promise<never[]> }) => Promise<T>) =>
    fn({
      query: async (_sql: string, p?: unknown[]) => {
        rows += (p?.[0] as unknown[]).length;
        return [];
      },
    }),
};
const writer = new UsageWriter({ db: db as unknown as Pick<Db, 'tx'>, clock });

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const recordUs: number[] = [];
const flushUs: number[] = [];
const rowsPerFlush: number[] = [];
for (let round = 0; round < ROUNDS + 2; round++) {
  // Each round is a minute of traffic: its keys' rows are new.
  now += 60_000;
  const t0 = cpu();
  for (let i = 0; i < BATCH; i++) {
    const [t, status] = traces[(i * 31 + round) % traces.length];
    // Spread over every key, not only the 1000 of the mix.
    t.keyId = t.keyId === null ? null : 1 + ((i * 7919 + round) % KEYS);
    writer.record('v2', t, status);
  }
  const t1 = cpu();
  rows = 0;
  await writer.flush();
  const t2 = cpu();
  if (round < 2) continue; // warm-up
  recordUs.push((t1 - t0) / BATCH);
  flushUs.push((t2 - t1) / BATCH);
  rowsPerFlush.push(rows);
}
console.log(
  `record: ${(med(recordUs) * 1000).toFixed(0)} ns per request; flush preparation: ${(med(flushUs) * 1000).toFixed(0)} ns per request ` +
    `(${med(rowsPerFlush)} rows over the three tables per ${BATCH} requests over ${KEYS} keys); median of ${ROUNDS} rounds`,
);
