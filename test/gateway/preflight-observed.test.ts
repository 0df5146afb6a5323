// CORS preflights are requests like the others for the operator (issue 20, defect 11): each one is
// counted in keygate_requests_total (route "preflight") and gets its access-log line, allowed or refused.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { createLogger } from '../../src/ops/logger.js';

describe('CORS preflights in the metrics and the access log', () => {
  const lines: Record<string, unknown>[] = [];
  let s: Stack;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    s = await startStack({ log: createLogger('info', sink), env: { CORS_ORIGINS: 'https://app.example.test' } });
  });
  afterAll(async () => {
    await s?.close();
  });

  const preflight = (origin: string) =>
    fetch(s.gatewayUrl + '/v2/workspaces/100/tags', {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
        'x-request-id': `pf-${origin.length}`,
      },
    });

  it('counts each preflight and logs it', async () => {
    const allowed = await preflight('https://app.example.test');
    const refused = await preflight('https://evil.example');
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.test');
    expect(refused.status).toBe(204);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    const metrics = await (await fetch(s.adminUrl + '/metrics')).text();
    expect(metrics).toMatch(
      /keygate_requests_total\{[^}]*route="preflight"[^}]*method="OPTIONS"[^}]*status="204"[^}]*\} 2\n/,
    );
    // The access log is written in batches: wait for both lines.
    const deadline = Date.now() + 5_000;
    const logged = () => lines.filter((l) => l.method === 'OPTIONS' && l.route === 'preflight');
    while (logged().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(logged().map((l) => l.status)).toEqual([204, 204]);
    expect(
      logged()
        .map((l) => l.requestId)
        .sort(),
    ).toEqual(['pf-20', 'pf-24']);
  });
});
