// Fields an upstream may trust for routing or for the client's address never pass as the client wrote
// them (issue 20, defect 9): a method override or an original URL would let the upstream act outside
// the method and path the gateway authorized. The upstream gets the client address, protocol and host
// as the gateway saw them instead. Seen from the upstream's side (a recording upstream).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';

const SPOOFED: Record<string, string> = {
  'x-http-method-override': 'DELETE',
  'x-http-method': 'DELETE',
  'x-method-override': 'DELETE',
  'x-original-url': '/v2/workspaces/200/members/11',
  'x-rewrite-url': '/v2/workspaces/200/members/11',
  forwarded: 'for=1.2.3.4;proto=https;host=admin.internal',
  'x-real-ip': '1.2.3.4',
  'x-forwarded-host': 'admin.internal',
  'x-forwarded-proto': 'https',
  'x-forwarded-port': '443',
  'true-client-ip': '1.2.3.4',
  'x-client-ip': '1.2.3.4',
  'cf-connecting-ip': '1.2.3.4',
};

/** One GET through the gateway from 127.0.0.1, with the given Host and fields. */
function get(url: string, path: string, host: string, headers: Record<string, string>): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: u.port, path, method: 'GET', headers: { ...headers, host } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('fields an upstream may trust', () => {
  let rec: Recorder;
  let direct: Stack;
  beforeAll(async () => {
    rec = await startRecorder();
    // No TRUST_PROXY: the peer (127.0.0.1) is the client.
    direct = await startStack({ upstreamOverride: rec.url, env: { TRUST_PROXY: '' } });
  });
  afterAll(async () => {
    await direct?.close();
    await rec?.close();
  });

  it('drops what the client wrote and sends the address, protocol and host the gateway saw', async () => {
    rec.seen.length = 0;
    const status = await get(direct.gatewayUrl, '/v2/workspaces/100/tags', 'api.example.test', {
      authorization: `Bearer ${K.wsAdmin}`,
      'x-forwarded-for': '9.9.9.9',
      ...SPOOFED,
    });
    expect(status).toBe(200);
    const h = rec.seen[0].headers;
    for (const name of [
      'x-http-method-override',
      'x-http-method',
      'x-method-override',
      'x-original-url',
      'x-rewrite-url',
      'x-real-ip',
      'true-client-ip',
      'x-client-ip',
      'cf-connecting-ip',
      'x-forwarded-port',
    ]) {
      expect(h[name], name).toBeUndefined();
    }
    // Appended: the upstream reads the right-most entry, the address the gateway saw.
    expect(h['x-forwarded-for']).toBe('9.9.9.9, 127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('api.example.test');
    expect(h.forwarded).toBe('for=127.0.0.1;proto=http;host="api.example.test"');
    expect(rec.seen[0].method).toBe('GET');
    expect(rec.seen[0].url).toBe('/v2/workspaces/100/tags');
  });
});

describe('behind a trusted proxy', () => {
  let rec: Recorder;
  let behind: Stack;
  beforeAll(async () => {
    rec = await startRecorder();
    behind = await startStack({ upstreamOverride: rec.url, env: { TRUST_PROXY: '127.0.0.1' } });
  });
  afterAll(async () => {
    await behind?.close();
    await rec?.close();
  });

  it('keeps the protocol and host a TRUST_PROXY peer reports, and still drops the rest', async () => {
    rec.seen.length = 0;
    const status = await get(behind.gatewayUrl, '/v2/workspaces/100/tags', 'gateway.internal:8080', {
      authorization: `Bearer ${K.wsAdmin}`,
      'x-forwarded-for': '203.0.113.7',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'api.example.test',
      'x-original-url': '/v2/workspaces/200/members/11',
      'x-http-method-override': 'DELETE',
    });
    expect(status).toBe(200);
    const h = rec.seen[0].headers;
    expect(h['x-original-url']).toBeUndefined();
    expect(h['x-http-method-override']).toBeUndefined();
    expect(h['x-forwarded-for']).toBe('203.0.113.7, 203.0.113.7');
    expect(h['x-forwarded-proto']).toBe('https');
    expect(h['x-forwarded-host']).toBe('api.example.test');
    expect(h.forwarded).toBe('for=203.0.113.7;proto=https;host="api.example.test"');
  });

  it('does not believe a protocol or host that is not one, even from a trusted peer', async () => {
    rec.seen.length = 0;
    await get(behind.gatewayUrl, '/v2/workspaces/100/tags', 'gateway.internal', {
      authorization: `Bearer ${K.wsAdmin}`,
      'x-forwarded-proto': 'gopher',
      'x-forwarded-host': 'evil.test/path?x',
    });
    const h = rec.seen[0].headers;
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('gateway.internal');
  });
});
