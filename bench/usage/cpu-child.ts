// The process of bench/usage/cpu.ts: two gateways of this tree in one process, USAGE_HISTORY=off and on,
// sharing everything else (the same modules, heap and machine moment), so what differs is the history.
// IPC: sends {ready: {off: url, on: url}}; answers 'cpu' with {cpu} (process.cpuUsage(), µs).
import { readFileSync } from 'node:fs';
import { loadSettings, withGeneratedSecrets } from '../../src/config/settings.js';
import { createLogger } from '../../src/ops/logger.js';
import { startApp } from '../../src/app.js';
import { parseSeed } from '../../src/backend/seed.js';

const urls: Record<string, string | null> = {};
const apps: { close(): Promise<void> }[] = [];
let seed: unknown = parseSeed(JSON.parse(readFileSync(process.env.SEED_FILE!, 'utf8')), process.env.SEED_FILE);
// USC_FIRST=on starts the "on" gateway first: which of two gateways in one process is started first
// may cost by itself (the seed, the first compilations), and the other order shows it.
const order = process.env.USC_FIRST === 'on' ? (['on', 'off'] as const) : (['off', 'on'] as const);
for (const usage of order) {
  const settings = withGeneratedSecrets(loadSettings({ ...process.env, USAGE_HISTORY: usage }, 'gateway'));
  const log = createLogger(settings.LOG_LEVEL);
  const app = await startApp({ mode: 'gateway', settings, log, seed, ephemeralPorts: true });
  seed = undefined;
  apps.push(app);
  urls[usage] = app.gatewayUrl;
}
process.on('message', (m) => {
  if (m === 'cpu') {
    const u = process.cpuUsage();
    process.send!({ cpu: u.user + u.system });
  } else if (m === 'exit') {
    // Closed, not just exited: the history writes what it holds at its stop.
    void Promise.all(apps.map((a) => a.close())).finally(() => process.exit(0));
  }
});
process.send!({ ready: urls });
