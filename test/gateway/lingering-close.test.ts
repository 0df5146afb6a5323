// Issue 20, defect 4: a refused upload gets its answer. The gateway answers a body over the limit (413)
// or a body without a key (401) before reading it, with `Connection: close`; a client still sending
// must then read that answer rather than a reset (RFC 9112 section 9.6: the gateway keeps reading and
// discarding for a while before it closes). Three kinds of client, 40 tries per case, against the
// real gateway program.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayProgram, type GatewayProgram } from '../helpers/gateway-program.js';
import { K } from '../fixtures/seed.js';
import { listenLocal } from '../helpers/listen.js';

const MiB = 1024 * 1024;
const TRIES = 40;
const PATH = '/v2/workspaces/100/accounts';

let gateway: GatewayProgram;
let upstream: http.Server;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"data":{}}'));
  });
  const { url: upstreamUrl } = await listenLocal(upstream);
  gateway = await startGatewayProgram({
    UPSTREAM_URL: upstreamUrl,
    BODY_LIMIT_BYTES: String(MiB),
  });
}, 180_000);

afterAll(async () => {
  await gateway?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

/** What a client read: the status and the error code of the envelope, or the error it got instead. */
type Outcome = { status: number; code: string } | { error: string };

const codeOf = (text: string): string => {
  try {
    const body = JSON.parse(text) as { code?: unknown; error?: { code?: unknown } };
    return String(body.code ?? body.error?.code ?? '');
  } catch {
    return 'unparsable';
  }
};

const headers = (key: boolean, i: number): Record<string, string> => ({
  'content-type': 'application/json',
  'x-forwarded-for': `10.2.${i >> 8}.${i & 255}`,
  ...(key ? { authorization: `Bearer ${K.wsAdmin}` } : {}),
});

/** fetch with a streamed (chunked) body of `size` bytes in 64 KiB pieces. */
async function viaFetch(key: boolean, size: number, i: number): Promise<Outcome> {
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) return controller.close();
      const n = Math.min(64 * 1024, size - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
  try {
    const res = await fetch(`http://127.0.0.1:${gateway.port}${PATH}`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: headers(key, i),
    } as RequestInit);
    return { status: res.status, code: codeOf(await res.text()) };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    return { error: cause?.code ?? (err as Error).message };
  }
}

/** node:http with a Content-Length of `size`, the body written in one piece. */
function viaHttp(key: boolean, size: number, i: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: gateway.port,
        method: 'POST',
        path: PATH,
        agent: false,
        headers: { ...headers(key, i), 'content-length': String(size) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, code: codeOf(text) }));
        res.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
      },
    );
    req.on('error', (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
    req.end(Buffer.alloc(size, 0x20));
  });
}

/** A raw socket: the head, then `size` bytes in one write; whatever arrives until the socket ends. */
function viaSocket(key: boolean, size: number, i: number): Promise<Outcome> {
  return new Promise((resolve) => {
    let got = Buffer.alloc(0);
    let error: string | null = null;
    const s = net.connect(gateway.port, '127.0.0.1', () => {
      const fields = Object.entries({ ...headers(key, i), 'content-length': String(size) }).map(
        ([k, v]) => `${k}: ${v}\r\n`,
      );
      s.write(`POST ${PATH} HTTP/1.1\r\nhost: x\r\n${fields.join('')}\r\n`);
      s.write(Buffer.alloc(size, 0x20));
    });
    s.on('data', (c) => (got = Buffer.concat([got, c])));
    s.on('error', (err) => (error = (err as NodeJS.ErrnoException).code ?? err.message));
    s.on('close', () => {
      const text = got.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3}) [^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      const length = m && /content-length: (\d+)/i.exec(m[2]);
      if (m && length && m[3].length >= Number(length[1]))
        resolve({ status: Number(m[1]), code: codeOf(m[3].slice(0, Number(length[1]))) });
      else resolve({ error: error ?? `incomplete answer (${got.length} bytes)` });
    });
  });
}

type Client = (key: boolean, size: number, i: number) => Promise<Outcome>;

/** `TRIES` uploads, four at a time: how many read the expected answer, and what the others got. */
async function tries(
  client: Client,
  key: boolean,
  size: number,
  status: number,
): Promise<{ answered: number; others: string[] }> {
  let answered = 0;
  const others: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < TRIES) {
      const i = next++;
      const o = await client(key, size, i);
      if ('status' in o && o.status === status) answered++;
      else others.push('error' in o ? o.error : `${o.status} ${o.code}`);
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  return { answered, others };
}

describe.runIf(Boolean(process.env.DATABASE_URL))('a refused upload is answered, whatever the client', () => {
  // 413: a chunked body read until it passes the limit, or a Content-Length over it (refused from the head).
  // 401: no key, refused from the head (a Content-Length within the limit, or chunked).
  const cases: [string, Client, boolean, number, number][] = [
    ['fetch, chunked, over the limit', viaFetch, true, 2 * MiB, 413],
    ['fetch, chunked, no key', viaFetch, false, 2 * MiB, 401],
    ['node:http, Content-Length over the limit', viaHttp, true, 2 * MiB, 413],
    ['node:http, Content-Length, no key', viaHttp, false, MiB, 401],
    ['raw socket, Content-Length over the limit', viaSocket, true, 2 * MiB, 413],
    ['raw socket, Content-Length, no key', viaSocket, false, MiB, 401],
  ];
  it.concurrent.each(cases)(
    '%s: every try reads its answer',
    async (_name, client, key, size, status) => {
      const { answered, others } = await tries(client, key, size, status);
      expect(others).toEqual([]);
      expect(answered).toBe(TRIES);
    },
    60_000,
  );
});
