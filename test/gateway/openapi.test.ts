// The API descriptions are served by the gateway at GET /v2/openapi.json and GET /v1/openapi.json,
// without a key and spending nothing (src/gateway/openapi.ts; the files are config/openapi/*.json).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiRoute } from '../../src/gateway/openapi.js';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';

describe('openApiRoute', () => {
  it("answers the two document paths with the files' bytes, read once, and nothing else", () => {
    const dir = mkdtempSync(join(tmpdir(), 'keygate-openapi-'));
    try {
      writeFileSync(join(dir, 'v2.json'), '{"openapi":"3.1.0","info":{"title":"v2"}}\n');
      writeFileSync(join(dir, 'v1.json'), '{"openapi":"3.1.0","info":{"title":"v1"}}\n');
      expect(openApiRoute('/v2/openapi.json', dir)?.toString()).toContain('"v2"');
      expect(openApiRoute('/v1/openapi.json', dir)?.toString()).toContain('"v1"');
      // Loaded once: a later change of the file is not seen until the process restarts.
      writeFileSync(join(dir, 'v2.json'), '{}');
      expect(openApiRoute('/v2/openapi.json', dir)?.toString()).toContain('"v2"');
      for (const other of [
        '/v2/openapi.json/',
        '/v2/openapi',
        '/v3/openapi.json',
        '/v2/workspaces/100/openapi.json',
        '/openapi.json',
      ]) {
        expect(openApiRoute(other, dir), other).toBeNull();
      }
      expect(openApiRoute('/v2/openapi.json', join(dir, 'missing'))).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /v2/openapi.json and /v1/openapi.json through the gateway', () => {
  const clock = new FakeClock();
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ clock });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('serve the checked-in documents without a key', async () => {
    for (const api of ['v2', 'v1']) {
      const res = await s.request('GET', `/${api}/openapi.json`, { ip: '10.90.0.1' });
      expect(res.status, res.text.slice(0, 200)).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.text).toBe(readFileSync(`config/openapi/${api}.json`, 'utf8'));
    }
  });

  it("spend nothing: neither the address layer nor a key's bucket", async () => {
    const ip = '10.90.0.2';
    for (let i = 0; i < 3; i++) {
      expect((await s.request('GET', '/v2/openapi.json', { key: K.wsAdmin, ip })).status).toBe(200);
      expect((await s.request('GET', '/v1/openapi.json', { apiKey: K.partner, ip })).status).toBe(200);
    }
    const v2 = await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip });
    expect(v2.status).toBe(200);
    expect(v2.body.data.ip.used).toBe(0);
    expect(v2.body.data.buckets.read.used).toBe(0);
    const v1 = await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip });
    expect(v1.body.used).toBe(0);
  });
});
