// Envoy's gRPC external authorization (src/decision/grpc.ts) on a whole keygate: a grpc-js client built
// from Envoy's published definitions asks as Envoy would; the decisions are those of the gateway's own
// proxy, the layers are spent once across both, and every message on the wire is checked against the
// published encoding.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  status as grpcStatus,
  type ServiceError,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { FakeClock, startStack, type Res, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { sign, UNSIGNED_BODY } from '../../src/http/identity.js';
import { startGrpcDecision } from '../../src/decision/grpc.js';
import type { GatewayDeps } from '../../src/gateway/context.js';
import { oursService, publishedService } from './grpc-published.js';

const published = publishedService().Check!;
const ours = oursService().Check!;

interface HeaderOption {
  header: { key: string; value: string };
  append?: { value?: boolean };
  append_action?: number;
}
interface CheckResponse {
  status: { code?: number };
  ok_response?: { headers?: HeaderOption[]; headers_to_remove?: string[]; response_headers_to_add?: HeaderOption[] };
  denied_response?: { status: { code: number }; headers?: HeaderOption[]; body?: string };
}

/** The bytes of the last exchange, as they crossed the wire. */
const wire: { request: Buffer; response: Buffer } = { request: Buffer.alloc(0), response: Buffer.alloc(0) };

/** A client of the published service that keeps the bytes it sends and receives; `raw` sends given bytes. */
function client(address: string, raw?: Buffer) {
  const capturing: ServiceDefinition = {
    Check: {
      ...published,
      requestSerialize: (v: unknown) => (wire.request = raw ?? published.requestSerialize(v)),
      responseDeserialize: (b: Buffer) => {
        wire.response = b;
        return published.responseDeserialize(b);
      },
    },
  };
  const Client = makeGenericClientConstructor(capturing, 'Authorization');
  return new Client(address, credentials.createInsecure()) as unknown as {
    Check(
      req: unknown,
      md: Metadata,
      opts: { deadline: number },
      cb: (err: ServiceError | null, res: CheckResponse) => void,
    ): void;
    close(): void;
  };
}

let s: Stack;
let deps: GatewayDeps;
let envoy: ReturnType<typeof client>;
beforeAll(async () => {
  s = await startStack({ clock: new FakeClock(), env: { DECISION_GRPC_PORT: '0' } });
  deps = s.app.gatewayDeps!;
  envoy = client(s.app.decisionGrpcAddress!);
});
afterAll(async () => {
  envoy?.close();
  await s?.close();
});

function call(c: ReturnType<typeof client>, req: unknown): Promise<CheckResponse> {
  return new Promise((resolve, reject) =>
    c.Check(req, new Metadata(), { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res))),
  );
}

/** A CheckRequest as Envoy writes one for an HTTP/2 request from `source`. */
function envoyRequest(method: string, path: string, headers: Record<string, string>, source: string) {
  return {
    attributes: {
      source: { address: { socket_address: { address: source, port_value: 40000 } } },
      destination: { address: { socket_address: { address: '10.0.0.1', port_value: 8443 } } },
      request: {
        time: { seconds: 1764806400 },
        http: {
          id: '7781c4b6',
          method,
          headers: {
            ':authority': 'api.example.com',
            ':method': method,
            ':path': path,
            ':scheme': 'https',
            ...headers,
          },
          path,
          host: 'api.example.com',
          scheme: 'https',
          protocol: 'HTTP/2',
          size: -1,
        },
      },
    },
  };
}

/** Ask through gRPC, and prove both messages are the published encoding of what our proto/ reads. */
async function check(method: string, path: string, headers: Record<string, string>, source: string) {
  const req = envoyRequest(method, path, headers, source);
  const res = await call(envoy, req);
  expect(wire.request.equals(published.requestSerialize(req))).toBe(true);
  expect(ours.requestDeserialize(wire.request)).toMatchObject({
    attributes: { request: { http: { method, path, headers } } },
  });
  // What keygate sent is what the published definitions write for the message they read from it.
  expect(wire.response.equals(published.responseSerialize(res))).toBe(true);
  expect(published.responseSerialize(ours.responseDeserialize(wire.response)).equals(wire.response)).toBe(true);
  return res;
}

const fieldsOf = (list: HeaderOption[] | undefined) => new Map((list ?? []).map((o) => [o.header.key, o.header.value]));

/** The same refusal as the gateway's own: status, body, fields (values that count or name the request aside). */
function expectSameAnswer(res: CheckResponse, g: Res) {
  const denied = res.denied_response!;
  expect(denied.status.code).toBe(g.status);
  expect(res.status.code).toBe(g.status === 401 ? grpcStatus.UNAUTHENTICATED : grpcStatus.PERMISSION_DENIED);
  expect(JSON.parse(denied.body!)).toEqual(g.body);
  const fields = fieldsOf(denied.headers);
  expect(fields.get('content-type')).toBe(g.headers.get('content-type'));
  for (const name of fields.keys()) expect(g.headers.has(name), name).toBe(true);
  for (const [name] of g.headers) {
    if (!['date', 'connection', 'keep-alive', 'content-length'].includes(name))
      expect(fields.has(name), name).toBe(true);
  }
  expect(fields.has('content-length')).toBe(false);
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const BAD = 'svc_ws_' + 'NoSuchKey0000000000000000000000000001';
const WS = '/v2/workspaces/100/accounts';

describe('gRPC Check decides as the gateway does', () => {
  it.each([
    ['no key', {}, WS, {}, 401],
    ['a key that does not exist', bearer(BAD), WS, { key: BAD }, 401],
    ["another workspace's key", bearer(K.wsOther), WS, { key: K.wsOther }, 403],
    ['a key without the scope', bearer(K.wsNoScope), WS, { key: K.wsNoScope }, 403],
  ] as const)('refuses %s with the gateway’s exact answer', async (_what, headers, path, opts, status) => {
    const res = await check('GET', path, headers, '198.51.100.10');
    const g = await s.request('GET', path, { ...opts, ip: '198.51.100.11' });
    expect(g.status).toBe(status);
    expectSameAnswer(res, g);
  });

  it('allows a valid key: the signed identity set upstream, the key removed, the limits for the client', async () => {
    const path = `${WS}?limit=5`;
    const res = await check('GET', path, { ...bearer(K.wsAdmin), 'x-gateway-identity': 'forged' }, '198.51.100.20');
    expect(res.status.code ?? 0).toBe(grpcStatus.OK);
    const ok = res.ok_response!;
    for (const o of [...ok.headers!, ...ok.response_headers_to_add!]) {
      expect(o.append?.value).toBe(false);
      expect(o.append_action).toBe(2);
    }
    const up = fieldsOf(ok.headers);
    const requestId = up.get('x-request-id')!;
    const [ts, identity] = [up.get('x-gateway-timestamp')!, up.get('x-gateway-identity')!];
    expect(identity).not.toBe('forged');
    expect(up.get('x-gateway-signature')).toBe(
      sign(s.gatewaySecret, ts, requestId, 'GET', path, identity, UNSIGNED_BODY),
    );
    expect(ok.headers_to_remove).toEqual(['authorization']);
    const client = fieldsOf(ok.response_headers_to_add);
    expect(client.get('x-request-id')).toBe(requestId);
    expect(client.get('x-ratelimit-remaining')).toBe('19');
    expect((await s.request('GET', WS, { key: K.wsAdmin, ip: '198.51.100.21' })).status).toBe(200);
  });

  it('allows a /v1 partner key as the gateway does', async () => {
    const res = await check('GET', '/v1/email-accounts', { 'x-api-key': K.partner }, '198.51.100.30');
    expect(res.status.code ?? 0).toBe(grpcStatus.OK);
    expect(res.ok_response!.headers_to_remove).toEqual(['x-api-key']);
    expect(fieldsOf(res.ok_response!.headers).has('x-gateway-signature')).toBe(true);
    expect((await s.request('GET', '/v1/email-accounts', { apiKey: K.partner, ip: '198.51.100.31' })).status).toBe(200);
  });

  it('spends each layer once: the counters run on across gRPC and the gateway', async () => {
    const path = '/v2/workspaces/101/accounts';
    const remaining = async () =>
      fieldsOf((await check('GET', path, bearer(K.wsOther), '198.51.100.40')).ok_response!.response_headers_to_add).get(
        'x-ratelimit-remaining',
      );
    expect(await remaining()).toBe('19');
    expect(await remaining()).toBe('18');
    const g = await s.request('GET', path, { key: K.wsOther, ip: '198.51.100.41' });
    expect(g.headers.get('x-ratelimit-remaining')).toBe('17');
    expect(await remaining()).toBe('16');
  });

  it('answers a spent key 429 as the gateway does, and the gateway then refuses it too', async () => {
    for (let i = 0; i < 20; i++) await check('GET', WS, bearer(K.wsViewer), '198.51.100.50');
    const res = await check('GET', WS, bearer(K.wsViewer), '198.51.100.50');
    const g = await s.request('GET', WS, { key: K.wsViewer, ip: '198.51.100.51' });
    expect(g.status).toBe(429);
    expectSameAnswer(res, g);
  });

  it('finds the client address through TRUST_PROXY from the source address Envoy states', async () => {
    // The address rate limit counts the client: 100 a minute from one address, whatever the key.
    const ipRemaining = async (source: string, xff: string) => {
      const res = await check('GET', WS, { ...bearer(K.wsAdmin), 'x-forwarded-for': xff }, source);
      return fieldsOf(res.ok_response!.response_headers_to_add).get('x-ratelimit-ip-remaining');
    };
    // From a trusted source (127.0.0.1 is in the stack's TRUST_PROXY) X-Forwarded-For names the client.
    const first = Number(await ipRemaining('127.0.0.1', '192.0.2.60'));
    expect(Number(await ipRemaining('127.0.0.1', '192.0.2.60'))).toBe(first - 1);
    // From an untrusted source the field is the client's own word: the source is the client.
    expect(Number(await ipRemaining('192.0.2.61', '192.0.2.60'))).toBe(first);
  });
});

describe('gRPC Check refuses what it cannot decide', () => {
  const refusal = (c: ReturnType<typeof client>, req: unknown) =>
    call(c, req).then(
      () => null,
      (err: ServiceError) => ({ code: err.code, details: err.details }),
    );

  it('answers bytes that do not decode with INVALID_ARGUMENT, and goes on serving', async () => {
    const bad = client(s.app.decisionGrpcAddress!, Buffer.from([0x0a, 0x7f, 0x01]));
    expect(await refusal(bad, {})).toEqual({
      code: grpcStatus.INVALID_ARGUMENT,
      details: 'the CheckRequest does not decode',
    });
    bad.close();
    const res = await check('GET', WS, {}, '198.51.100.70');
    expect(res.denied_response!.status.code).toBe(401);
  });

  it.each([
    ['no HTTP request', {}, 'attributes.request.http is required'],
    [
      'a target that is not a path',
      { attributes: { request: { http: { method: 'GET', path: 'http://x/' } } } },
      'attributes.request.http.path must be a path starting with /',
    ],
    [
      'a method that is not a token',
      { attributes: { request: { http: { method: 'G T', path: '/' } } } },
      'attributes.request.http.method must be an HTTP method',
    ],
  ])('answers %s with INVALID_ARGUMENT naming the field', async (_what, req, details) => {
    expect(await refusal(envoy, req)).toEqual({ code: grpcStatus.INVALID_ARGUMENT, details });
  });

  it('refuses a request over the size bound with RESOURCE_EXHAUSTED', async () => {
    const big = envoyRequest('GET', WS, { 'x-pad': 'a'.repeat(1024 * 1024) }, '198.51.100.80');
    expect((await refusal(envoy, big))?.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
  });
});

describe('closing the gRPC service', () => {
  /** The gateway's dependencies with every key look-up held until `release`. */
  function held() {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const state = { entered: false };
    const access = new Proxy(deps.access, {
      get: (target, prop) => {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== 'function') return v;
        return (...a: unknown[]) => {
          state.entered = true;
          return gate.then(() => v.apply(target, a));
        };
      },
    });
    return { deps: { ...deps, access }, release, state };
  }

  it('answers the calls in flight, then takes no more', async () => {
    const h = held();
    const g = await startGrpcDecision(h.deps, { host: '127.0.0.1', port: 0 });
    const c = client(g.address);
    const pending = call(c, envoyRequest('GET', WS, bearer(K.wsAdmin), '198.51.100.90'));
    // The call has reached the key look-up, where the service holds it.
    await expect.poll(() => h.state.entered).toBe(true);
    const closed = g.close(10_000);
    h.release();
    expect((await pending).status.code ?? 0).toBe(grpcStatus.OK);
    await closed;
    const after = await call(c, envoyRequest('GET', WS, {}, '198.51.100.91')).catch((e: ServiceError) => e.code);
    expect(after).toBe(grpcStatus.UNAVAILABLE);
    c.close();
  });

  it('cancels what is still running when the time is up', async () => {
    const h = held();
    const g = await startGrpcDecision(h.deps, { host: '127.0.0.1', port: 0 });
    const c = client(g.address);
    const pending = call(c, envoyRequest('GET', WS, bearer(K.wsAdmin), '198.51.100.92')).catch(
      (e: ServiceError) => e.code,
    );
    await expect.poll(() => h.state.entered).toBe(true);
    await g.close(20);
    expect(await pending).toBe(grpcStatus.CANCELLED);
    h.release();
    c.close();
  });
});
