// What the forwarder's tests share: a fake TargetSet (targets in a fixed order, the first untried one
// picked, reports and changes recorded), real upstreams on loopback ports that answer, reset, hang or
// stream as told, a closed port, and a front server that hands each request to the forwarder under test.
import http from 'node:http';
import net from 'node:net';
import { serviceConfig, serviceSchema, type ServiceConfig, type ServiceFile } from '../../../src/config/services.js';
import type { Forwarder, UpstreamFailure, UpstreamRequest } from '../../../src/gateway/upstream-client.js';
import type {
  AttemptResult,
  Target,
  TargetHealth,
  TargetSet,
  UpstreamEvents,
} from '../../../src/gateway/upstreams/types.js';
import { listenLocal } from '../../helpers/listen.js';

/** UPSTREAM_CLIENT's values: the forwarder's own tests run over each. */
export const CLIENTS = ['undici', 'lean'] as const;

/**
 * The client the gateway-level forwarding tests (smoke, hostile-clients, drain-deadline, body-share) run
 * over: the test run's UPSTREAM_CLIENT, the default (lean) unless it says undici. A whole gateway per client
 * in every run would double their time, so the other client is a second run: `UPSTREAM_CLIENT=undici npx vitest run ...`.
 */
export const TESTED_CLIENT = { UPSTREAM_CLIENT: process.env.UPSTREAM_CLIENT === 'undici' ? 'undici' : 'lean' };

export function service(file: ServiceFile): ServiceConfig {
  return serviceConfig('svc', serviceSchema.parse(file));
}

function targetOf(url: string): Target {
  const u = new URL(url);
  return {
    key: u.host,
    origin: u.origin,
    authority: u.host,
    basePath: u.pathname === '/' ? '' : u.pathname.replace(/\/$/, ''),
    weight: 1,
    outstanding: 0,
  };
}

/** Targets in the order given; `pick` gives the first not tried (the first of all when every one was). */
export class FakeTargets implements TargetSet {
  readonly service = 'svc';
  readonly reports: [string, AttemptResult][] = [];
  private targets: Target[];
  private readonly listeners: (() => void)[] = [];

  constructor(urls: string[]) {
    this.targets = urls.map(targetOf);
  }

  pick(tried?: ReadonlySet<Target>): Target | null {
    return this.targets.find((t) => !tried?.has(t)) ?? this.targets[0] ?? null;
  }
  all(): readonly Target[] {
    return this.targets;
  }
  healthyCount(): number {
    return this.targets.length;
  }
  report(target: Target, result: AttemptResult): void {
    this.reports.push([target.key, result]);
  }
  health(): TargetHealth[] {
    return this.targets.map((t) => ({ key: t.key, healthy: true, ejectedUntil: null, outstanding: t.outstanding }));
  }
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }
  start(): void {}
  close(): void {}

  /** The targets become these (kept objects for URLs still there), and the listeners hear it. */
  change(urls: string[]): void {
    this.targets = urls.map((u) => this.targets.find((t) => t.origin === new URL(u).origin) ?? targetOf(u));
    for (const l of this.listeners) l();
  }
  /** Requests in flight on each target, by key. */
  outstanding(): Record<string, number> {
    return Object.fromEntries(this.targets.map((t) => [t.key, t.outstanding]));
  }
}

export class Events implements UpstreamEvents {
  readonly attempts: [string, AttemptResult][] = [];
  readonly retries: ('not_sent' | 'sent')[] = [];
  exhausted = 0;
  ejected(): void {}
  readmitted(): void {}
  resolved(): void {}
  retried(_service: string, cause: 'not_sent' | 'sent'): void {
    this.retries.push(cause);
  }
  budgetExhausted(): void {
    this.exhausted++;
  }
  attempt(_service: string, target: string, result: AttemptResult): void {
    this.attempts.push([target, result]);
  }
}

/**
 * ok: answers its name, method, path, Host and body as JSON; reset: reads the request, then destroys the
 * socket; hang: never answers; 503: answers 503; stream: a body in chunks with pauses; slow: its name
 * after `delayMs`; stall: a head and part of the body, then silence.
 */
export type Mode = 'ok' | 'reset' | 'hang' | '503' | 'stream' | 'slow' | 'stall';

export interface Seen {
  method: string;
  url: string;
  host: string;
  body: string;
}

export interface Upstream {
  name: string;
  url: string;
  key: string;
  mode: Mode;
  /** How long `slow` waits before it answers. */
  delayMs: number;
  seen: Seen[];
  /** Connections open to it now. */
  open(): number;
  /** Resolves when no connection is open to it. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export const CHUNKS = 20;
export const chunk = (i: number) => Buffer.alloc(16 * 1024, 97 + (i % 26));

export async function upstream(name: string, mode: Mode): Promise<Upstream> {
  const sockets = new Set<net.Socket>();
  let waiting: (() => void)[] = [];
  const u: Upstream = {
    name,
    url: '',
    key: '',
    mode,
    delayMs: 300,
    seen: [],
    open: () => sockets.size,
    idle: () => (sockets.size === 0 ? Promise.resolve() : new Promise<void>((r) => waiting.push(r))),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      u.seen.push({ method: req.method!, url: req.url!, host: req.headers.host ?? '', body });
      answer(u, req, res, body);
    });
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => {
      sockets.delete(s);
      if (sockets.size === 0) {
        const w = waiting;
        waiting = [];
        for (const r of w) r();
      }
    });
  });
  const { url, port } = await listenLocal(server);
  u.url = url;
  u.key = `127.0.0.1:${port}`;
  return u;
}

function answer(u: Upstream, req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  const { mode, name } = u;
  if (mode === 'reset') return void req.socket.destroy();
  if (mode === 'hang') return;
  if (mode === '503') return void res.writeHead(503, { 'retry-after': '5' }).end(`${name} is busy`);
  if (mode === 'stall') return void res.writeHead(200, { 'content-length': 100 }).write('part of it');
  if (mode === 'slow') return void setTimeout(() => res.end(name), u.delayMs);
  if (mode === 'stream') {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-from': name });
    let i = 0;
    const next = () => {
      if (i === CHUNKS) return void res.end();
      res.write(chunk(i++));
      setTimeout(next, 2);
    };
    return next();
  }
  res.writeHead(200, { 'content-type': 'application/json', 'x-from': name });
  res.end(JSON.stringify({ name, method: req.method, url: req.url, host: req.headers.host, body }));
}

/** A loopback URL nothing listens on: connecting is refused. */
export async function closedPort(): Promise<string> {
  const s = net.createServer();
  const { url } = await listenLocal(s);
  await new Promise((r) => s.close(r));
  return url;
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The forwarder's onFail, when it was called. */
  failure?: UpstreamFailure;
}

/** A front server: each request is handed to `state.forwarder` with `state.route`; onFail answers 502 or 504. */
export async function front(state: { forwarder: Forwarder | null; route?: UpstreamRequest['route'] }) {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = parts.length ? Buffer.concat(parts) : null;
      state.forwarder!.forward(
        {
          method: req.method!,
          target: req.url!,
          headers: ['host', req.headers.host ?? '', 'x-test', '1'],
          body,
          head: ['x-request-id', 'r1'],
          route: state.route,
        },
        res,
        (kind) => res.writeHead(kind === 'gateway_timeout' ? 504 : 502, { 'x-failure': kind }).end(kind),
      );
    });
  });
  const { url } = await listenLocal(server);
  const request = (path: string, method = 'GET', body?: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = http.request(url + path, { method, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: Buffer.concat(chunks),
            failure: res.headers['x-failure'] as UpstreamFailure | undefined,
          }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  return {
    url,
    request,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The JSON an `ok` upstream answers. */
export function echoed(a: Answer): { name: string; method: string; url: string; host: string; body: string } {
  return JSON.parse(a.body.toString());
}
