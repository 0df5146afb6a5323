// A stand-in upstream that records what reached it, to prove what the gateway forwards (and what
// it never forwards). Behaviours: answer (default), stall (never answer), reset (destroy the socket).
import http from 'node:http';
import { listenLocal } from './listen.js';

export interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Recorder {
  url: string;
  seen: Recorded[];
  mode: 'answer' | 'stall' | 'reset' | 'garbage' | 'reset-mid-body';
  close(): Promise<void>;
}

export async function startRecorder(): Promise<Recorder> {
  const rec: Recorder = { url: '', seen: [], mode: 'answer', close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      rec.seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      });
      if (rec.mode === 'stall') return;
      if (rec.mode === 'reset') return req.socket.destroy();
      if (rec.mode === 'reset-mid-body') {
        // The head and part of the body, then the connection dies.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"data":');
        setTimeout(() => req.socket.destroy(), 20);
        return;
      }
      if (rec.mode === 'garbage') {
        req.socket.end('HTTP/1.1 ??? nonsense\r\n\r\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: { upstream: true }, meta: { request_id: req.headers['x-request-id'] } }));
    });
  });
  rec.url = (await listenLocal(server)).url;
  rec.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return rec;
}
