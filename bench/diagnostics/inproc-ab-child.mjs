// The process of bench/diagnostics/inproc-ab.ts: one gateway per compiled build, all in this one process.
// Every build imports its dependencies (undici, ioredis, pino, node:http) from the same node_modules,
// so they are the same module instances: the builds differ only in keygate's own code, and the draw
// of one process against another (V8's compilation, layout, GC state) is shared by all of them.
// Env: BUILDS (JSON: [{name, dir}]), SEED_FILE, and the gateway's own settings. IPC: sends
// {ready: {name: url}}; answers {cpu} with process.cpuUsage() in µs.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const builds = JSON.parse(process.env.BUILDS);
const urls = {};
let first = true;
for (const { name, dir } of builds) {
  const mod = (file) => import(pathToFileURL(join(dir, file)).href);
  const { loadSettings, withGeneratedSecrets } = await mod('config/settings.js');
  const { createLogger } = await mod('ops/logger.js');
  const { startApp } = await mod('app.js');
  const settings = withGeneratedSecrets(loadSettings(process.env, 'gateway'));
  const log = createLogger(settings.LOG_LEVEL);
  let seed;
  if (first && process.env.SEED_FILE) {
    const { parseSeed } = await mod('backend/seed.js');
    seed = parseSeed(JSON.parse(readFileSync(process.env.SEED_FILE, 'utf8')), process.env.SEED_FILE);
  }
  first = false;
  const app = await startApp({ mode: 'gateway', settings, log, seed, ephemeralPorts: true });
  urls[name] = app.gatewayUrl;
}
process.on('message', (m) => {
  if (m === 'cpu') {
    const u = process.cpuUsage();
    process.send({ cpu: u.user + u.system });
  } else if (m === 'exit') process.exit(0);
});
process.send({ ready: urls });
