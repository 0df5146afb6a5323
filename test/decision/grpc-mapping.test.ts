// The CheckRequest as keygate's described request, and the decision as the CheckResponse
// (src/decision/grpc-mapping.ts, docs/forward-auth-grpc.md): no server, the functions themselves.
import { describe, expect, it } from 'vitest';
import { checkResponse, describedRequest, InvalidCheck } from '../../src/decision/grpc-mapping.js';
import { TrustedProxies } from '../../src/http/client-ip.js';
import type { CheckRequest } from '../../src/decision/grpc-proto.js';

const trusted = new TrustedProxies(['10.0.0.0/8']);
type Http = NonNullable<NonNullable<NonNullable<CheckRequest['attributes']>['request']>['http']>;
const checkOf = (http: Http, source?: string): CheckRequest => ({
  attributes: {
    request: { http },
    ...(source === undefined ? {} : { source: { address: { socket_address: { address: source } } } }),
  },
});

describe('describedRequest', () => {
  it('takes the method, the target with its query, the fields without pseudo-fields, Host from :authority', () => {
    const d = describedRequest(
      checkOf(
        {
          method: 'GET',
          path: '/v2/x?a=1',
          headers: { ':authority': 'api.test', ':path': '/v2/x?a=1', 'X-Api-Key': 'k' },
        },
        '198.51.100.1',
      ),
      '127.0.0.1:5000',
      trusted,
    );
    expect(d).toEqual({
      method: 'GET',
      target: '/v2/x?a=1',
      headers: { host: 'api.test', 'x-api-key': 'k' },
      ip: '198.51.100.1',
    });
  });

  it('reads the raw field list, joining repeated lines and reading bytes as latin1', () => {
    const d = describedRequest(
      checkOf({
        method: 'POST',
        path: '/v1/x',
        host: 'h.test',
        size: 12,
        header_map: {
          headers: [
            { key: 'accept', raw_value: Buffer.from('a') },
            { key: 'Accept', raw_value: Buffer.from('b') },
            { key: 'x-name', raw_value: Buffer.from([0xe9]) },
          ],
        },
      }),
      '127.0.0.1:5000',
      trusted,
    );
    expect(d.headers).toEqual({ accept: 'a,b', 'x-name': 'é', host: 'h.test', 'content-length': '12' });
  });

  it('states the size only when the fields do not', () => {
    const headers = (h: Record<string, string>, size: number) =>
      describedRequest(checkOf({ method: 'POST', path: '/', headers: h, size }), '127.0.0.1:1', trusted).headers;
    expect(headers({ 'content-length': '3' }, 12)['content-length']).toBe('3');
    expect(headers({ 'transfer-encoding': 'chunked' }, 12)['content-length']).toBeUndefined();
    expect(headers({}, -1)['content-length']).toBeUndefined();
  });

  it('reads X-Forwarded-For through TRUST_PROXY from the source, and falls back to the gRPC peer', () => {
    const ip = (source: string | undefined, peer: string) =>
      describedRequest(
        checkOf({ method: 'GET', path: '/', headers: { 'x-forwarded-for': '192.0.2.9, 10.1.1.1' } }, source),
        peer,
        trusted,
      ).ip;
    expect(ip('10.2.2.2', '127.0.0.1:1')).toBe('192.0.2.9');
    expect(ip('198.51.100.3', '127.0.0.1:1')).toBe('198.51.100.3');
    expect(ip(undefined, '::ffff:10.3.3.3:4567')).toBe('192.0.2.9');
    expect(ip(undefined, '203.0.113.4:4567')).toBe('203.0.113.4');
  });

  it.each([
    [{}, 'attributes.request.http is required'],
    [checkOf({ path: '/' }), 'attributes.request.http.method must be an HTTP method'],
    [checkOf({ method: 'GET', path: '*' }), 'attributes.request.http.path must be a path starting with /'],
    [
      checkOf({ method: 'GET', path: '/' }, 'not-an-ip'),
      'attributes.source.address.socket_address.address must be an IP',
    ],
    [
      checkOf({ method: 'GET', path: '/', header_map: { headers: [{ value: 'v' }] } }),
      'attributes.request.http.header_map.headers[].key is required',
    ],
  ] as [CheckRequest, string][])('refuses a request keygate cannot decide on, naming the field', (check, message) => {
    expect(() => describedRequest(check, '127.0.0.1:1', trusted)).toThrow(new InvalidCheck(message));
  });
});

describe('checkResponse', () => {
  it('allows with the identity set, the credentials and foreign x-gateway-* fields removed, the limits added', () => {
    const r = checkResponse(
      {
        kind: 'allow',
        requestId: 'r',
        clientFields: ['X-Request-Id', 'r', 'X-RateLimit-Remaining', 19],
        upstreamFields: ['x-request-id', 'r', 'authorization', 'Bearer jwt'],
        principal: {} as never,
        grant: null,
        route: 'GET /v2/x',
      },
      { authorization: 'Bearer k', 'x-api-key': 'k', 'x-gateway-identity': 'forged', accept: '*/*' },
    );
    expect(r.status.code).toBe(0);
    expect(r.ok_response!.headers.map((o) => [o.header.key, o.header.value])).toEqual([
      ['x-request-id', 'r'],
      ['authorization', 'Bearer jwt'],
    ]);
    // authorization is replaced by the identity JWT here, not removed after it.
    expect(r.ok_response!.headers_to_remove).toEqual(['x-api-key', 'x-gateway-identity']);
    expect(r.ok_response!.response_headers_to_add.map((o) => [o.header.key, o.header.value])).toEqual([
      ['x-request-id', 'r'],
      ['x-ratelimit-remaining', '19'],
    ]);
  });

  it.each([
    [401, 16],
    [403, 7],
    [429, 7],
    [200, 7],
  ])('answers %i under gRPC status %i, without the framing fields', (status, code) => {
    const r = checkResponse(
      {
        kind: 'answer',
        requestId: 'r',
        status,
        fields: ['Content-Type', 'application/json', 'Content-Length', 2, 'Retry-After', 7],
        body: Buffer.from('{}'),
      },
      {},
    );
    expect(r.status.code).toBe(code);
    expect(r.denied_response).toEqual({
      status: { code: status },
      headers: [
        { header: { key: 'content-type', value: 'application/json' }, append: { value: false }, append_action: 2 },
        { header: { key: 'retry-after', value: '7' }, append: { value: false }, append_action: 2 },
      ],
      body: '{}',
    });
  });
});
