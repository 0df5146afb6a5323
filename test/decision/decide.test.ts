// The decision core (src/decision/decide.ts): the gateway's pipeline run on a described request, its
// answers captured byte for byte, an admitted request handed back with its fields, the layers spent
// once, as through the gateway's own proxy.
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
