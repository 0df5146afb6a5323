// The lean upstream client (src/gateway/upstreams/lean-pool.ts) against a raw upstream that answers
// byte for byte as told: which connections are reused and which are not (an answer asking to close, a
// body left unread, bytes after an answer, the upstream's Keep-Alive bound), bodies framed by length,
// by chunks and by the close, the request head it writes, and undici's error codes the forwarder maps.
// The forwarder's own behaviour over it is test/gateway/upstream-client.test.ts's and forwarder.test.ts's.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Dispatcher } from 'undici';
import { LeanPool } from '../../../src/gateway/upstreams/lean-pool.js';
import { listenLocal } from '../../helpers/listen.js';

interface Raw {
  url: string;
  /** Connections accepted so far. */
  connections: number;
  /** Each request's head as received, in order. */
  heads: string[];
  close(): Promise<void>;
}

/** An upstream that reads each request head (and a Content-Length body) and writes `answer(n)` for the n-th. */
async function raw(answer: (n: number, head: string) => string): Promise<Raw> {
  const sockets = new Set<net.Socket>();
  const r: Raw = {
    url: '',
    connections: 0,
    heads: [],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((done) => server.close(done));
    },
  };
  const server = net.createServer((socket) => {
    r.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // the client's resets are what some tests are about
    let buffered = '';
    socket.on('data', (d: Buffer) => {
      buffered += d.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        r.heads.push(head);
        const out = answer(r.heads.length, head);
        if (out === 'RESET') return void socket.destroy();
        socket.write(out, 'latin1');
        if (/\r\nconnection: close/i.test(out)) socket.end();
      }
    });
  });
  r.url = (await listenLocal(server)).url;
  return r;
}

interface Outcome {
  status: number;
  fields: string[];
  body: string;
  error?: string;
}

/** One request through the pool; `abortAtHead` abandons it at its answer's head (its body unread). */
function send(pool: LeanPool, opts: Partial<Dispatcher.DispatchOptions> = {}, abortAtHead = false): Promise<Outcome> {
  return new Promise((resolve) => {
    const out: Outcome = { status: 0, fields: [], body: '' };
    let abort: ((err?: Error) => void) | null = null;
    pool.dispatch({ method: 'GET', path: '/', headers: [], body: null, ...opts } as Dispatcher.DispatchOptions, {
      onConnect: (a) => (abort = a),
      onHeaders: (status, fields) => {
        out.status = status;
        out.fields = fields.map(String);
        if (abortAtHead) {
          abort!(new Error('done with it'));
          resolve(out);
          return false;
        }
        return true;
      },
      onData: (chunk) => {
        out.body += chunk.toString();
        return true;
      },
      onComplete: () => resolve(out),
      onError: (err) => {
        out.error = (err as NodeJS.ErrnoException).code ?? err.message;
        resolve(out);
      },
    });
  });
}

const ok = (body: string, extra = '') => `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n${extra}\r\n${body}`;
const opened: { pool: LeanPool; up: Raw }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) {
    await o.pool.destroy();
    await o.up.close();
  }
});

async function setup(answer: (n: number, head: string) => string, connections = 4) {
  const up = await raw(answer);
  const pool = new LeanPool(up.url, { connections, connectTimeout: 1_000, keepAliveTimeout: 30_000 });
  opened.push({ pool, up });
  return { up, pool };
}

describe('lean pool: connection reuse', () => {
  it('carries requests one after another over one keep-alive connection', async () => {
    const { up, pool } = await setup((n) => ok(`answer ${n}`));
    for (let i = 1; i <= 3; i++) expect((await send(pool)).body).toBe(`answer ${i}`);
    expect(up.connections).toBe(1);
  });

  it('opens a new connection after an answer that asked to close', async () => {
    const { up, pool } = await setup((n) => ok(`answer ${n}`, n === 1 ? 'connection: close\r\n' : ''));
    expect((await send(pool)).body).toBe('answer 1');
    expect((await send(pool)).body).toBe('answer 2');
    expect(up.connections).toBe(2);
  });

  it('does not reuse a connection whose answer body was left unread', async () => {
    const { up, pool } = await setup((n) => (n === 1 ? ok('x'.repeat(100_000)) : ok(`answer ${n}`)));
    const first = await send(pool, {}, true);
    expect(first.status).toBe(200);
    expect((await send(pool)).body).toBe('answer 2');
    expect(up.connections).toBe(2);
  });

  it('does not reuse a connection the upstream sent more than its answer on', async () => {
    const { up, pool } = await setup((n) => ok(`answer ${n}`) + (n === 1 ? 'HTTP/1.1 200 OK\r\n' : ''));
    expect((await send(pool)).body).toBe('answer 1');
    expect((await send(pool)).body).toBe('answer 2');
    expect(up.connections).toBe(2);
  });

  it("keeps an idle connection no longer than the upstream's Keep-Alive timeout less undici's margin", async () => {
    // timeout=2 less the 2 s margin leaves nothing: each request needs a connection of its own.
    const { up, pool } = await setup((n) => ok(`answer ${n}`, 'keep-alive: timeout=2\r\n'));
    expect((await send(pool)).body).toBe('answer 1');
    expect((await send(pool)).body).toBe('answer 2');
    expect(up.connections).toBe(2);
  });

  it('fails a request whose connection the upstream reset, and serves the next on a new one', async () => {
    const { up, pool } = await setup((n) => (n === 1 ? 'RESET' : ok(`answer ${n}`)));
    expect((await send(pool)).error).toBe('UND_ERR_SOCKET');
    expect((await send(pool)).body).toBe('answer 2');
    expect(up.connections).toBe(2);
  });

  it('waits for a connection when all are busy, within its bound', async () => {
    const { up, pool } = await setup((n) => ok(`answer ${n}`), 1);
    const all = await Promise.all([send(pool), send(pool), send(pool)]);
    expect(all.map((a) => a.body)).toEqual(['answer 1', 'answer 2', 'answer 3']);
    expect(up.connections).toBe(1);
  });
});

describe('lean pool: answers', () => {
  it('reads a chunked body whole, and reuses the connection after it', async () => {
    const chunked = 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n';
    const { up, pool } = await setup(() => chunked);
    expect((await send(pool)).body).toBe('hello world');
    expect((await send(pool)).body).toBe('hello world');
    expect(up.connections).toBe(1);
  });

  it('reads a body that ends with the connection', async () => {
    const { pool } = await setup(() => 'HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end');
    expect((await send(pool)).body).toBe('until the end');
  });

  it('skips interim answers, and reads no body after a HEAD', async () => {
    const { pool } = await setup((n) =>
      n === 1
        ? 'HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n' + ok('final')
        : 'HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n',
    );
    const first = await send(pool);
    expect([first.status, first.body]).toEqual([200, 'final']);
    const head = await send(pool, { method: 'HEAD' });
    expect([head.status, head.body, head.error]).toEqual([200, '', undefined]);
  });

  it('fails an answer it cannot parse with a parser code', async () => {
    const { pool } = await setup(() => 'HTTP/1.1 abc\r\n\r\n');
    expect((await send(pool)).error).toMatch(/^HPE_/);
  });
});

describe('lean pool: the request', () => {
  it('writes Host and Content-Length as undici does, and keep-alive', async () => {
    const { up, pool } = await setup(() => ok('ok'));
    await send(pool, { method: 'POST', path: '/p?q=1', headers: ['x-a', '1'], body: Buffer.from('hello') });
    await send(pool, { method: 'POST', path: '/empty', headers: { host: 'example.test' } });
    const [a, b] = up.heads;
    expect(a).toMatch(/^POST \/p\?q=1 HTTP\/1\.1\r\n/);
    expect(a).toContain(`\r\nhost: ${new URL(up.url).host}\r\n`);
    expect(a).toContain('\r\ncontent-length: 5\r\n');
    expect(a).toContain('\r\nconnection: keep-alive');
    expect(b).toContain('\r\nhost: example.test\r\n');
    expect(b).not.toContain(new URL(up.url).host);
    expect(b).toContain('\r\ncontent-length: 0\r\n');
  });

  it('refuses a field value with a line break, sending nothing', async () => {
    const { up, pool } = await setup(() => ok('ok'));
    expect((await send(pool, { headers: ['x-a', 'one\r\nx-b: two'] })).error).toBe('UND_ERR_INVALID_ARG');
    expect((await send(pool, { headers: ['transfer-encoding', 'chunked'] })).error).toBe('UND_ERR_INVALID_ARG');
    expect(up.heads).toEqual([]);
  });

  it('refuses a Content-Length the body does not have', async () => {
    const { pool } = await setup(() => ok('ok'));
    const r = await send(pool, { method: 'POST', headers: ['content-length', '9'], body: Buffer.from('abc') });
    expect(r.error).toBe('UND_ERR_REQ_CONTENT_LENGTH_MISMATCH');
  });
});

describe('lean pool: failures and closing', () => {
  it('names a refused connection by its errno, before any onConnect', async () => {
    const s = net.createServer();
    const { url } = await listenLocal(s);
    await new Promise((r) => s.close(r));
    const pool = new LeanPool(url, { connections: 1, connectTimeout: 1_000, keepAliveTimeout: 30_000 });
    let connected = false;
    const code = await new Promise<string | undefined>((resolve) =>
      pool.dispatch({ method: 'GET', path: '/', headers: [] } as Dispatcher.DispatchOptions, {
        onConnect: () => (connected = true),
        onError: (err) => resolve((err as NodeJS.ErrnoException).code),
      }),
    );
    await pool.destroy();
    expect(code).toBe('ECONNREFUSED');
    expect(connected).toBe(false);
  });

  it('close() lets the request in flight finish and refuses new ones; destroy() fails them', async () => {
    let release: () => void = () => {};
    const { pool } = await setup(() => ok('late'));
    const inFlight = send(pool);
    const closing = pool.close();
    expect((await send(pool)).error).toBe('UND_ERR_CLOSED');
    expect((await inFlight).body).toBe('late');
    await closing;

    const hang = await raw(() => {
      release();
      return '';
    });
    const hanging = new LeanPool(hang.url, { connections: 1, connectTimeout: 1_000, keepAliveTimeout: 30_000 });
    opened.push({ pool: hanging, up: hang });
    const sent = new Promise<void>((r) => (release = r));
    const cut = send(hanging);
    await sent;
    await hanging.destroy();
    expect((await cut).error).toBe('UND_ERR_DESTROYED');
    expect((await send(hanging)).error).toBe('UND_ERR_DESTROYED');
  });
});
