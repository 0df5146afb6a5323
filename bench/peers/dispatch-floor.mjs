// The floor of keygate's own architecture: node:http in front, an undici Pool's lowest-level `dispatch`
// behind (keygate's src/gateway/upstream-client.ts without its timer, checks or header cleaning), no checks, no
// Redis, no log. What keygate costs above it is keygate's own work; what it costs above nginx is the
// runtime's (bench/RESULTS.md). Env: PORT, HOST, UPSTREAM_URL.
import http from 'node:http';
import Pool from 'undici/lib/dispatcher/pool.js';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
const upstream = new URL(process.env.UPSTREAM_URL ?? 'http://127.0.0.1:8081');
const pool = new Pool(upstream.origin, { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });

class Relay {
  constructor(res) {
    this.res = res;
  }
  onConnect() {}
  onHeaders(status, raw, _resume, statusText) {
    const head = [];
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toString('latin1');
      if (name.length !== 10 || name.toLowerCase() !== 'connection') head.push(name, raw[i + 1].toString('latin1'));
    }
    this.res.writeHead(status, statusText || undefined, head);
    return true;
  }
  onData(chunk) {
    return this.res.write(chunk);
  }
  onComplete() {
    this.res.end();
  }
  onError() {
    if (this.res.headersSent) return void this.res.destroy();
    this.res.writeHead(502, { 'content-type': 'application/json' });
    this.res.end('{"error":"bad_gateway"}');
  }
}

const server = http.createServer((req, res) => {
  const headers = {};
  for (const k in req.headers) if (k !== 'connection' && k !== 'keep-alive') headers[k] = req.headers[k];
  pool.dispatch({ origin: upstream.origin, method: req.method, path: req.url, headers, body: null }, new Relay(res));
});
server.keepAliveTimeout = 65_000;
server.listen(port, host, () => console.log(`dispatch floor pid ${process.pid} listening on ${host}:${port}`));
for (const sig of ['SIGTERM', 'SIGINT'])
  process.once(sig, () => (server.close(() => process.exit(0)), server.closeAllConnections(), pool.destroy()));
