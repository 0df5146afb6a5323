// A WebSocket upstream for the gateway's tunnels (src/gateway/websocket.ts): it echoes every message,
// keeps each handshake's request (to prove what the gateway sent) and each close code it got, refuses
// a handshake whose target carries `deny` with 403, and answers a plain HTTP request 200.
import http from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';
import { listenLocal } from './listen.js';

export interface WsEcho {
  url: string;
  /** The handshakes that reached it, in order. */
  handshakes: http.IncomingMessage[];
  /** The close codes its sockets got, in order. */
  closes: number[];
  /** Its side of each open socket. */
  sockets: WebSocket[];
  close(): Promise<void>;
}

export async function startWsEcho(): Promise<WsEcho> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"data":{"plain":true}}');
  });
  const wss = new WebSocketServer({
    server,
    verifyClient: (info, done) => (info.req.url?.includes('deny') ? done(false, 403, 'denied') : done(true)),
  });
  const echo: WsEcho = { url: '', handshakes: [], closes: [], sockets: [], close: async () => {} };
  wss.on('connection', (ws, req) => {
    echo.handshakes.push(req);
    echo.sockets.push(ws);
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
    ws.on('close', (code) => echo.closes.push(code));
    ws.on('error', () => {});
  });
  echo.url = (await listenLocal(server)).url;
  echo.close = async () => {
    for (const ws of wss.clients) ws.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
    await new Promise<void>((r) => server.close(() => r()));
  };
  return echo;
}

/** The next close of `ws`: its code and reason. */
export function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

/** Open `ws`, or reject with the answer it got instead (status, fields, body). */
export function opened(ws: WebSocket): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    ws.once('upgrade', (res) => ws.once('open', () => resolve(res)));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`answered ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function jsonOr(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The answer of a handshake the gateway refused: status, fields and the body (parsed when JSON). */
export function refused(ws: WebSocket): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    ws.once('upgrade', () => reject(new Error('the handshake was accepted')));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: jsonOr(text) }));
    });
  });
}

/** The next message `ws` receives, as text. */
export function nextMessage(ws: WebSocket): Promise<string> {
  return new Promise((resolve) => ws.once('message', (data) => resolve(data.toString())));
}
