// The decision core (src/decision/decide.ts): the gateway's pipeline run on a described request, its
// answers captured byte for byte, an admitted request handed back with its fields, the layers spent
// once, as through the gateway's own proxy.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { decide, type Decision } from '../../src/decision/decide.js';
import type { GatewayDeps } from '../../src/gateway/context.js';
import { UNSIGNED_BODY, sign } from '../../src/http/identity.js';

let s: Stack;
let deps: GatewayDeps;
beforeAll(async () => {
  s = await startStack();
  deps = s.app.gatewayDeps!;
});
afterAll(async () => s?.close());

const fieldsOf = (list: (string | number)[]) => {
  const m = new Map<string, string>();
  for (let i = 0; i < list.length; i += 2) m.set(String(list[i]).toLowerCase(), String(list[i + 1]));
  return m;
};
const ask = (method: string, target: string, headers: Record<string, string>, ip = '10.9.0.1'): Promise<Decision> =>
  decide(deps, { method, target, headers, ip });

describe('decide', () => {
  it('answers a request without a key as the gateway does, byte for byte', async () => {
    const d = await ask('GET', '/v2/workspaces/100/accounts', {}, '10.9.0.2');
    const g = await s.request('GET', '/v2/workspaces/100/accounts', { ip: '10.9.0.3' });
    expect(d.kind).toBe('answer');
    if (d.kind !== 'answer') return;
    expect(d.status).toBe(401);
    expect(JSON.parse(d.body.toString())).toEqual(g.body);
    const f = fieldsOf(d.fields);
    expect(f.get('x-ratelimit-ip-limit')).toBe('100');
    expect(f.get('x-request-id')).toBe(d.requestId);
  });

  it('admits a valid key with its rate-limit fields and a signed identity, spending once', async () => {
    const d = await ask('GET', '/v2/workspaces/100/accounts?x=1', { authorization: `Bearer ${K.wsAdmin}` });
    expect(d.kind).toBe('allow');
    if (d.kind !== 'allow') return;
    const client = fieldsOf(d.clientFields);
    expect(client.get('x-ratelimit-remaining')).toBe('19');
    const up = fieldsOf(d.upstreamFields);
    expect(up.get('x-request-id')).toBe(d.requestId);
    const ts = up.get('x-gateway-timestamp')!;
    const identity = up.get('x-gateway-identity')!;
    expect(up.get('x-gateway-signature')).toBe(
      sign(s.gatewaySecret, ts, d.requestId, 'GET', '/v2/workspaces/100/accounts?x=1', identity, UNSIGNED_BODY),
    );
    const again = await ask('GET', '/v2/workspaces/100/accounts', { authorization: `Bearer ${K.wsAdmin}` });
    expect(again.kind === 'allow' && fieldsOf(again.clientFields).get('x-ratelimit-remaining')).toBe('18');
  });

  it('answers the rate-limit status route itself and 404 outside both interfaces', async () => {
    const st = await ask('GET', '/v2/workspaces/100/rate-limit', { authorization: `Bearer ${K.wsAdmin}` });
    expect(st.kind === 'answer' && st.status).toBe(200);
    const nf = await ask('GET', '/elsewhere', {});
    expect(nf.kind === 'answer' && nf.status).toBe(404);
  });
});

// Every caller of decide() (the HTTP endpoints, the gRPC service) gets the gateway's access line and its
// CORS handling: both are decide()'s own, not a listener's.
describe('decide, whoever asks', () => {
  const lines: string[] = [];
  let t: Stack;
  beforeAll(async () => {
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    t = await startStack({ env: { CORS_ORIGINS: 'https://app.example' }, log });
  });
  afterAll(async () => t?.close());

  it('writes the access line of each decision and answers a preflight as the gateway does', async () => {
    const d = await decide(t.app.gatewayDeps!, {
      method: 'GET',
      target: '/v2/workspaces/100/accounts',
      headers: { authorization: `Bearer ${K.wsAdmin}`, origin: 'https://app.example' },
      ip: '10.9.1.1',
    });
    expect(d.kind).toBe('allow');
    if (d.kind === 'allow')
      expect(fieldsOf(d.clientFields).get('access-control-allow-origin')).toBe('https://app.example');
    const pre = await decide(t.app.gatewayDeps!, {
      method: 'OPTIONS',
      target: '/v2/workspaces/100/accounts',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
      ip: '10.9.1.2',
    });
    expect(pre.kind === 'answer' && pre.status).toBe(204);
    // The access log writes its lines in batches: the last may come a moment after its answer.
    const logged = () => lines.join('');
    for (const deadline = Date.now() + 2_000; !logged().includes('"route":"preflight"') && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 20));
    expect(logged()).toContain(`"requestId":"${d.requestId}"`);
    expect(logged()).toContain('"route":"preflight"');
    expect(logged()).not.toContain(K.wsAdmin);
  });
});
