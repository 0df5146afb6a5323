// What undici costs the gateway as a client, against the least a client can do: the CPU per request of
// this process (user + system, process.cpuUsage) sending GET requests over 50 keep-alive connections to
// the trivial upstream (bench/peers/upstream.mjs), with the fields keygate sends, either through an
// undici Pool's `dispatch` (keygate's src/gateway/upstream-client.ts: raw response fields, each value decoded
// once) or over raw sockets: one pre-serialised request string written, the response head split on CRLF
// and its body taken by Content-Length, nothing else (no chunked bodies, no errors, no timeouts). The
// second is a floor no real client reaches; the difference bounds what replacing undici could save.
//
//   PORT=18081 node bench/peers/upstream.mjs &
//   node bench/diagnostics/upstream-client.mjs undici 200000; node bench/diagnostics/upstream-client.mjs raw 200000
// Env: UPSTREAM_PORT (18081).
import net from 'node:net';
import Pool from 'undici/lib/dispatcher/pool.js';

const mode = process.argv[2] ?? 'undici';
const total = Number(process.argv[3] ?? 200_000);
const CONNECTIONS = 50;
const port = Number(process.env.UPSTREAM_PORT ?? 18081);
const PATH = '/v2/workspaces/100/tags';
// The fields keygate sends upstream for the bench's request (values of the same lengths).
const FIELDS = [
  'user-agent',
  'autocannon',
  'accept',
  '*/*',
  'x-forwarded-for',
  '10.0.1.2, 127.0.0.1',
  'x-request-id',
  'c0a8a1c2-1111-2222-3333-444455556666',
  'x-keygate-identity',
  'e'.repeat(330),
  'x-keygate-signature',
  `t=1764230000,v1=${'0'.repeat(64)}`,
];

let done = 0;
let started = 0;
const cpu0 = process.cpuUsage();
const wall0 = performance.now();
function finish() {
  const c = process.cpuUsage(cpu0);
  const seconds = (performance.now() - wall0) / 1000;
  console.log(
    `${mode}: ${((c.user + c.system) / total).toFixed(2)} µs CPU a request, ${Math.round(total / seconds)} req/s`,
  );
  process.exit(0);
}

if (mode === 'undici') {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 64, pipelining: 1, keepAliveTimeout: 60_000 });
  const next = () => {
    if (started >= total) return;
    started++;
    pool.dispatch(
      { path: PATH, method: 'GET', headers: FIELDS },
      {
        onConnect() {},
        onHeaders(_status, raw) {
          for (let i = 0; i < raw.length; i += 2) raw[i + 1].toString('latin1');
          return true;
        },
        onData() {
          return true;
        },
        onComplete() {
          if (++done === total) finish();
          else next();
        },
        onError(err) {
          console.error(err);
          process.exit(1);
        },
      },
    );
  };
  for (let i = 0; i < CONNECTIONS; i++) next();
} else if (mode === 'raw') {
  let head = `GET ${PATH} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n`;
  for (let i = 0; i < FIELDS.length; i += 2) head += `${FIELDS[i]}: ${FIELDS[i + 1]}\r\n`;
  head += '\r\n';
  for (let c = 0; c < CONNECTIONS; c++) {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let pending = null;
    const send = () => {
      if (started >= total) return;
      started++;
      socket.write(head, 'latin1');
    };
    socket.on('connect', send);
    socket.on('data', (data) => {
      pending = pending ? Buffer.concat([pending, data]) : data;
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = pending.latin1Slice(0, end).split('\r\n');
      let length = 0;
      const fields = [];
      for (let i = 1; i < lines.length; i++) {
        const colon = lines[i].indexOf(':');
        const name = lines[i].slice(0, colon).toLowerCase();
        const value = lines[i].slice(colon + 1).trim();
        fields.push(name, value);
        if (name === 'content-length') length = Number(value);
      }
      if (pending.length < end + 4 + length) return;
      pending = null;
      if (++done === total) finish();
      else send();
    });
  }
} else {
  console.error('mode: undici or raw');
  process.exit(2);
}
