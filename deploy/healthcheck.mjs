// Health check of a keygate container, for Docker's HEALTHCHECK and the Kubernetes exec probe of the
// backend container. Exit 0 when healthy, 1 otherwise. Plain node, no dependencies: slim images have
// no curl.
//
//   gateway, start  GET http://127.0.0.1:$ADMIN_PORT/healthz must answer 200 (the admin listener).
//   backend         it has no admin listener: GET on $BACKEND_PORT must get any HTTP answer (the
//                   listener accepts and its event loop runs; the path itself is a 404).
//
// The mode is the first argument; without one it is read from PID 1's command line
// (`node dist/cli.js <mode>`, the image's CMD), else `gateway`. One-shot modes (migrate, seed) are
// healthy while they run.
import { readFileSync } from 'node:fs';
import http from 'node:http';

const TIMEOUT_MS = 3000;

function modeOfPid1() {
  try {
    const argv = readFileSync('/proc/1/cmdline', 'utf8').split('\0');
    const i = argv.findIndex((a) => /(^|\/)cli\.js$/.test(a));
    return i >= 0 ? argv[i + 1] || 'start' : undefined;
  } catch {
    return undefined;
  }
}

const port = (name, fallback) => {
  const v = process.env[name];
  return v && /^\d+$/.test(v) ? Number(v) : fallback;
};

const mode = process.argv[2] ?? modeOfPid1() ?? 'gateway';
if (mode === 'migrate' || mode === 'seed') process.exit(0);

const backend = mode === 'backend';
// The backend binds HOST, the operations port ADMIN_HOST (loopback unless set); a wildcard (or unset)
// address is reachable on the loopback address.
const bound = backend ? process.env.HOST : process.env.ADMIN_HOST;
const host = !bound || bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound;
const target = backend
  ? { port: port('BACKEND_PORT', 8081), path: '/', ok: () => true }
  : { port: port('ADMIN_PORT', 9090), path: '/healthz', ok: (status) => status === 200 };

const req = http.get({ host, port: target.port, path: target.path, timeout: TIMEOUT_MS }, (res) => {
  res.resume();
  const healthy = target.ok(res.statusCode ?? 0);
  if (!healthy) process.stderr.write(`unhealthy: ${host}:${target.port}${target.path} answered ${res.statusCode}\n`);
  process.exit(healthy ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
req.on('error', (err) => {
  process.stderr.write(`unhealthy: ${host}:${target.port}${target.path}: ${err.message}\n`);
  process.exit(1);
});
