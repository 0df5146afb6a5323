// CPU per access log line: pino's log.info (the generic path) against the gateway's writer
// (src/ops/logger.ts accessLogWriter), each into a sonic-boom destination as the programs use, one
// line per simulated request and a turn of the event loop between bursts of BURST lines (the lines of
// the requests one turn answers). Prints the median of ROUNDS bursts, microseconds per line.
//   npx tsx bench/diagnostics/access-line.ts            (DEST=/dev/null by default; DEST=1 for stdout)
import pino from 'pino';
import { accessLogWriter, createLogger, logAccess, type AccessLogSource } from '../../src/ops/logger.js';

const BURST = Number(process.env.BURST ?? 20);
const ROUNDS = Number(process.env.ROUNDS ?? 2000);
const dest = process.env.DEST === '1' ? 1 : (process.env.DEST ?? '/dev/null');

const source: AccessLogSource = {
  requestId: '3f2b1c9e-1111-4222-8333-444455556666',
  method: 'GET',
  route: '/v2/workspaces/{workspaceId}/tags',
  status: 200,
  code: null,
  ms: 1.2,
  organizationId: 1,
  keyId: 1000,
};

async function measure(name: string, write: (s: AccessLogSource) => void): Promise<void> {
  const perLine: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const before = process.cpuUsage();
    for (let i = 0; i < BURST; i++) {
      source.ms = (i % 100) / 7;
      write(source);
    }
    // The turn ends: the writer's batch and sonic-boom's write happen here, and are counted.
    await new Promise((r) => setImmediate(r));
    const used = process.cpuUsage(before);
    perLine.push((used.user + used.system) / BURST);
  }
  perLine.sort((a, b) => a - b);
  process.stderr.write(
    `${name}: ${perLine[perLine.length >> 1].toFixed(2)} µs per line (median of ${ROUNDS} turns of ${BURST} lines)\n`,
  );
}

const viaPino = createLogger('info', pino.destination({ dest, sync: false }));
const viaWriter = createLogger('info', pino.destination({ dest, sync: false }));
const writer = accessLogWriter(viaWriter);
for (let pass = 0; pass < 2; pass++) {
  await measure('pino log.info', (s) => logAccess(viaPino, s));
  await measure('accessLogWriter', writer);
}
