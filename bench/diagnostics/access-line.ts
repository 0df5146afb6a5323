// CPU per access log line: pino's log.info (the generic path) against the gateway's writer
// (src/ops/logger.ts accessLogWriter), into pino's asynchronous destination (sonic-boom) and into the
// process's own output (src/ops/log-sink.ts), one line per simulated request and a turn of the event
// loop between bursts of BURST lines (the lines of the requests one turn answers). Prints, in
// microseconds per line of the process's CPU (every thread: the writes off the event loop count), the
// median over ROUNDS turns (what a turn without a write costs) and the mean over all of them with the
// writes that were still due (what a line costs in all).
//   npx tsx bench/diagnostics/access-line.ts     (DEST=/dev/null by default; DEST=1 for stdout, or a file)
import { openSync } from 'node:fs';
import pino from 'pino';
import { accessLogWriter, createLogger, logAccess, type AccessLogSource } from '../../src/ops/logger.js';
import { LogSink, PIPE_BUF_BYTES } from '../../src/ops/log-sink.js';

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

async function measure(
  name: string,
  write: (s: AccessLogSource) => void,
  flush: (done: () => void) => void,
): Promise<void> {
  const perLine: number[] = [];
  const start = process.cpuUsage();
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
  // What is still pending is written (and waited for) inside the mean.
  await new Promise<void>((r) => flush(r));
  const all = process.cpuUsage(start);
  perLine.sort((a, b) => a - b);
  process.stderr.write(
    `${name}: ${perLine[perLine.length >> 1].toFixed(2)} µs per line (median of ${ROUNDS} turns of ${BURST} lines), ` +
      `${((all.user + all.system) / (ROUNDS * BURST)).toFixed(2)} µs mean\n`,
  );
}

const fd = typeof dest === 'number' ? dest : openSync(dest, 'a');
const sonic = () => pino.destination({ dest: fd, sync: false });
const viaPino = createLogger('info', sonic());
const viaWriter = createLogger('info', sonic());
const viaSink = createLogger('info', new LogSink(fd));
// As the processes of WORKERS > 1 write (one stdout shared): chunks a pipe keeps whole.
const viaShared = createLogger('info', new LogSink(fd, { chunkBytes: PIPE_BUF_BYTES }));
const writer = accessLogWriter(viaWriter);
const sinkWriter = accessLogWriter(viaSink);
const sharedWriter = accessLogWriter(viaShared);
// The writer's own batches are handed over on a 25 ms timer; then the destination flushes.
const settled = (log: pino.Logger) => (done: () => void) => setTimeout(() => log.flush(() => done()), 30);
for (let pass = 0; pass < 2; pass++) {
  await measure('pino log.info, sonic-boom', (s) => logAccess(viaPino, s), settled(viaPino));
  await measure('accessLogWriter, sonic-boom', writer, settled(viaWriter));
  await measure('accessLogWriter, LogSink', sinkWriter, settled(viaSink));
  await measure('accessLogWriter, LogSink of 4 KiB chunks', sharedWriter, settled(viaShared));
}
