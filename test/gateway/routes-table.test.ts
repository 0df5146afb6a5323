// The same security tests for every route of config/routes.json (CONTRIBUTING.md, adding a route).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { startRecorder, type Recorder } from '../helpers/recorder.js';
import { K } from '../fixtures/seed.js';
import { verifyHmacIdentity } from '../../src/verifier/index.js';
import { concretePath } from '../helpers/routes.js';

const file = JSON.parse(readFileSync('config/routes.json', 'utf8'));
const scopes: Record<string, string> = file.scopes;
const routes: { method: string; path: string; scope: string | null; bucket: string; gateway?: boolean }[] = file.v2;

const concrete = (p: string, wid = '100') => concretePath(p, (name) => (name === 'workspaceId' ? wid : '7'));
const rank = ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER'];

let s: Stack;
let rec: Recorder;
const clock = new FakeClock();
beforeAll(async () => {
  rec = await startRecorder();
  s = await startStack({ clock, mode: 'gateway', upstreamUrl: rec.url });
});
afterAll(async () => {
  await s?.close();
  await rec?.close();
});

// The gateway alone, forwarding to a recorder: what reached the upstream is exactly observable.
async function viaRecorder(method: string, path: string, key: string) {
  clock.advance(60_000); // a fresh window per request: this file tests authorization, not limits
  const before = rec.seen.length;
  const r = await s.request(method, path, { key, body: method === 'GET' || method === 'DELETE' ? undefined : {} });
  return { r, forwarded: rec.seen.slice(before) };
}

describe.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_name, route) => {
  const wsRoute = route.path.includes('{workspaceId}');
  const orgOwnerOnly = route.scope !== null && scopes[route.scope] === 'ORG_OWNER';
  const path = concrete(route.path);
  const validKey = orgOwnerOnly ? K.ownerPk : K.wsAdmin;

  it('a valid key reaches the upstream with a signed identity (or the gateway answers)', async () => {
    const { r, forwarded } = await viaRecorder(route.method, path, validKey);
    if (route.gateway) {
      expect(r.status).toBe(200);
      expect(forwarded).toHaveLength(0);
      return;
    }
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ upstream: true });
    expect(forwarded).toHaveLength(1);
    const f = forwarded[0];
    expect(f.url).toBe(path);
    expect(f.method).toBe(route.method);
    expect(f.headers.authorization).toBeUndefined();
    // The signature covers the body the upstream received (RFC 9530 Content-Digest).
    const id = await verifyHmacIdentity(
      s.gatewaySecret,
      { method: f.method, target: f.url, headers: f.headers, body: Buffer.from(f.body) },
      { now: () => clock.now() },
    );
    expect(id.organizationId).toBe(1);
    expect(r.headers.get('x-ratelimit-limit')).toBe(String({ read: 20, write: 10, bulk: 4 }[route.bucket]));
  });

  if (route.scope !== null)
    it('a key without the scope gets 150003', async () => {
      const { r, forwarded } = await viaRecorder(route.method, path, orgOwnerOnly ? K.editorPk : K.wsNoScope);
      expect(r.status).toBe(403);
      expect(r.body.errorCode).toBe('150003');
      expect(forwarded).toHaveLength(0);
    });

  if (route.scope !== null)
    it('a VIEWER-capped key gets 150003 above VIEWER, passes at VIEWER', async () => {
      const { r, forwarded } = await viaRecorder(route.method, path, K.wsViewer);
      const needsMore = orgOwnerOnly || rank.indexOf(scopes[route.scope!]) > 0;
      // GET /v2/workspaces also accepts a workspace key holding workspace:read (docs/decisions.md section 6).
      const workspaceList = route.method === 'GET' && route.path === '/v2/workspaces';
      if (needsMore && !workspaceList) {
        expect(r.status).toBe(403);
        expect(r.body.errorCode).toBe('150003');
        expect(forwarded).toHaveLength(0);
      } else {
        expect(r.status).toBe(200);
        expect(forwarded).toHaveLength(1);
      }
    });

  if (wsRoute)
    it('a key of another workspace gets 150004', async () => {
      const { r, forwarded } = await viaRecorder(route.method, path, K.wsOther);
      expect(r.status).toBe(403);
      expect(r.body.errorCode).toBe('150004');
      expect(forwarded).toHaveLength(0);
    });
});
