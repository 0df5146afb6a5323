// keygate's own proto/ (a subset of Envoy's external authorization API) against Envoy's published
// definitions: the same messages encode to the same bytes, and each side decodes the other's.
import { describe, expect, it } from 'vitest';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { oursService, publishedService } from './grpc-published.js';

const ours = oursService().Check!;
const published = publishedService().Check!;
type Method = ServiceDefinition[string];

/** A CheckRequest in keygate's fields only. */
const request = {
  attributes: {
    source: { address: { socket_address: { address: '203.0.113.7', port_value: 51234 } } },
    request: {
      http: {
        method: 'POST',
        headers: { ':authority': 'api.example.com', authorization: 'Bearer k', 'x-forwarded-for': '203.0.113.7' },
        path: '/v2/workspaces/100/accounts?limit=5',
        host: 'api.example.com',
        size: 42,
      },
    },
  },
};

const overwrite = (key: string, value: string) => ({
  header: { key, value },
  append: { value: false },
  append_action: 2,
});
const allowed = {
  status: { code: 0 },
  ok_response: {
    headers: [overwrite('x-request-id', 'r-1'), overwrite('x-gateway-identity', 'e30')],
    headers_to_remove: ['authorization'],
    response_headers_to_add: [overwrite('x-ratelimit-remaining', '19')],
  },
};
const denied = {
  status: { code: 16 },
  denied_response: {
    status: { code: 401 },
    headers: [overwrite('content-type', 'application/json')],
    body: '{"error":"unauthorized"}',
  },
};

const bytesOf = (m: Method, kind: 'request' | 'response', v: unknown): Buffer =>
  kind === 'request' ? m.requestSerialize(v) : m.responseSerialize(v);
const decode = (m: Method, kind: 'request' | 'response', b: Buffer): unknown =>
  kind === 'request' ? m.requestDeserialize(b) : m.responseDeserialize(b);

describe('proto/ against the published definitions', () => {
  it.each([
    ['request', 'CheckRequest', request],
    ['response', 'CheckResponse (ok)', allowed],
    ['response', 'CheckResponse (denied)', denied],
  ] as const)('encodes a %s (%s) to the same bytes and decodes the other side', (kind, _name, value) => {
    const mine = bytesOf(ours, kind, value);
    const theirs = bytesOf(published, kind, value);
    expect(mine.toString('hex')).toBe(theirs.toString('hex'));
    // our encoder -> their decoder, and theirs -> ours; the oneof's name is a decoder's addition.
    expect(decode(published, kind, mine)).toMatchObject(value);
    expect(decode(ours, kind, theirs)).toMatchObject(value);
  });

  it('decodes what Envoy sends beyond our fields, skipping the rest', () => {
    const full = {
      attributes: {
        ...request.attributes,
        destination: { address: { socket_address: { address: '10.0.0.2', port_value: 443 } }, principal: 'spiffe' },
        request: {
          time: { seconds: 1764806400, nanos: 5 },
          http: { ...request.attributes.request.http, id: '123', scheme: 'https', protocol: 'HTTP/2', body: 'x' },
        },
        context_extensions: { route: 'api' },
        tls_session: { sni: 'api.example.com' },
      },
    };
    expect(decode(ours, 'request', bytesOf(published, 'request', full))).toMatchObject(request);
  });

  it('decodes the raw header list (encode_raw_headers) with its byte values', () => {
    const raw = {
      attributes: {
        request: {
          http: {
            method: 'GET',
            path: '/v1/email-accounts',
            header_map: { headers: [{ key: 'x-api-key', raw_value: Buffer.from('svc_v1_k') }] },
          },
        },
      },
    };
    const back = decode(ours, 'request', bytesOf(published, 'request', raw)) as typeof raw;
    expect(Buffer.from(back.attributes.request.http.header_map.headers[0].raw_value).toString()).toBe('svc_v1_k');
  });

  it('writes a denied CheckResponse as the hand-encoded bytes', () => {
    // CheckResponse{status(1): Status{code(1)=7 PERMISSION_DENIED}, denied_response(2): DeniedHttpResponse{
    //   status(1): HttpStatus{code(1)=403}}}: 0a 02 | 08 07, then 12 05 | 0a 03 | 08 93 03 (403 = 0x193,
    // varint 0x93 0x03).
    const vector = '0a02080712050a03089303';
    const value = { status: { code: 7 }, denied_response: { status: { code: 403 } } };
    expect(ours.responseSerialize(value).toString('hex')).toBe(vector);
    expect(published.responseDeserialize(Buffer.from(vector, 'hex'))).toMatchObject(value);
  });
});
