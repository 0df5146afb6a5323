// OpenTelemetry tracing, driven through the real program: an OTLP/HTTP receiver (node:http, JSON
// bodies, as the exporter sends them) and a recording upstream on loopback. A forwarded request
// arrives as four spans (request, access decision, Redis gate, upstream exchange) and the upstream's
// `traceparent` names the gateway's upstream span as its parent; an incoming trace is continued;
// a refused request is traced too; the access line carries the trace id; no secret leaves.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import {
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type ReadableSpan,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import { freePort } from '../helpers/redis-server.js';
import { startProgram, type Program } from '../helpers/program.js';
import { createTracingFromEnv, tracingConfigured, type RequestTrace } from '../../src/ops/tracing.js';
import { createTracing, samplerFromEnv } from '../../src/ops/tracing-otel.js';
import type { Principal } from '../../src/access/principal.js';
import type { AccessResolver, ResolverEvents } from '../../src/access/resolver.js';
import type { GateRequest, SharedStores } from '../../src/limits/types.js';

const KEY = 'svc_ws_DemoWorkspaceAdminKey0000000000000001';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

const spans: OtlpSpan[] = [];
const rawExports: string[] = [];
const upstreamSeen: http.IncomingHttpHeaders[] = [];
let receiver: http.Server;
let upstream: http.Server;
let program: Program;
let gateway: string;

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined));
};

/** The spans of one trace, once `count` of them arrived (the exporter batches every 100 ms here). */
async function trace(traceId: string, count: number): Promise<OtlpSpan[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const got = spans.filter((s) => s.traceId === traceId);
    if (got.length >= count || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      rawExports.push(body);
      if (req.url === '/v1/traces' && (req.headers['content-type'] ?? '').includes('json')) {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  upstream = http.createServer((req, res) => {
    upstreamSeen.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}');
  });
  const [otlpPort, upstreamPort] = [await listen(receiver), await listen(upstream)];
  const [port, admin] = [await freePort(), await freePort()];
  program = await startProgram(
    {
      PORT: String(port),
      ADMIN_PORT: String(admin),
      BACKEND_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      DATA_DIR: 'memory://',
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_SERVICE_NAME: 'keygate-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      // The real Redis gate when the suite has a Redis (a prefix of its own), the in-memory stores otherwise.
      ...(process.env.REDIS_URL
        ? { REDIS_URL: process.env.REDIS_URL, REDIS_KEY_PREFIX: `kgtrace${process.pid}:` }
        : {}),
    },
    [],
    240_000,
  );
  gateway = `http://127.0.0.1:${port}`;
}, 300_000);

/** The access line of the request with this trace id (they reach stdout in batches: wait for it). */
async function accessLine(traceId: string): Promise<Record<string, unknown> | undefined> {
  const find = () =>
    program
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.traceId === traceId);
  const deadline = Date.now() + 10_000;
  while (!find() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return find();
}

afterAll(async () => {
  if (program && program.child.exitCode === null) {
    program.child.kill('SIGTERM');
    await new Promise((r) => program.child.once('exit', r));
  }
  receiver?.close();
  upstream?.close();
});

describe('tracing settings', () => {
  it('is off unless an OTLP endpoint is set, and off when disabled', async () => {
    expect(await createTracingFromEnv({})).toBeNull();
    expect(tracingConfigured({ OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(
      false,
    );
    expect(
      tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }),
    ).toBe(false);
  });
});

describe('sampling decided at the request head', () => {
  /** Tracing whose spans land in `spans` as each ends. */
  const tracingWith = (sampler: Sampler) => {
    const spans: ReadableSpan[] = [];
    const processor = new SimpleSpanProcessor({
      export: (batch, done) => (spans.push(...batch), done({ code: 0 })),
      shutdown: async () => {},
    });
    return { tracing: createTracing<AccessResolver>({ processor, sampler, serviceName: 'unit' }), spans };
  };
  const head = (headers: http.IncomingHttpHeaders) => ({ headers }) as http.IncomingMessage;
  const answered = { headersSent: true, statusCode: 200 } as http.ServerResponse;
  const outcome = { route: '/v2/x', code: null, organizationId: 1, keyId: 2 };
  /** The fields the upstream would get (the client's own trace fields copied first, as the gateway does). */
  const upstreamFields = (t: RequestTrace<AccessResolver>, copied: http.OutgoingHttpHeaders = {}) => {
    const out = { ...copied };
    t.upstream(out);
    return out;
  };
  const ratio = (r: number) => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(r) });

  it('an unsampled request forwards a valid traceparent continuing the incoming trace, and records nothing', async () => {
    const { tracing, spans } = tracingWith(ratio(1));
    const incoming = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00',
      tracestate: 'vendor=abc',
    };
    const t = tracing.request(head(incoming), answered, 'GET', 'rid');
    expect(t.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(t.access).toBeNull();
    const out = upstreamFields(t, incoming);
    const tp = TRACEPARENT.exec(String(out.traceparent));
    expect(tp, String(out.traceparent)).not.toBeNull();
    expect([tp![1], tp![3]]).toEqual(['0af7651916cd43dd8448eb211c80319c', '00']);
    expect(tp![2]).not.toBe('0000000000000000');
    expect(out.tracestate).toBe('vendor=abc');
    t.end(outcome, 200);
    await tracing.close();
    expect(spans).toEqual([]);
  });

  it('a request the root sampler leaves out gets a fresh trace id, the one it forwards, with flags 00', async () => {
    const { tracing, spans } = tracingWith(ratio(0));
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const t = tracing.request(head({}), answered, 'GET', `rid${i}`);
      const tp = TRACEPARENT.exec(String(upstreamFields(t).traceparent));
      expect(tp).not.toBeNull();
      expect(tp![1]).toBe(t.traceId);
      expect(tp![3]).toBe('00');
      expect(t.traceId).not.toBe('0'.repeat(32));
      ids.add(t.traceId);
      t.end(outcome, 200);
    }
    expect(ids.size).toBe(50);
    // An incoming sampled trace is honoured whatever the root ratio (parent-based).
    const t = tracing.request(
      head({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      answered,
      'GET',
      'rid',
    );
    const tp = TRACEPARENT.exec(String(upstreamFields(t).traceparent))!;
    expect([tp[1], tp[3]]).toEqual(['4bf92f3577b34da6a3ce929d0e0e4736', '01']);
    t.end(outcome, 200);
    await tracing.close();
    expect(spans.map((s) => s.spanContext().traceId)).toEqual([
      '4bf92f3577b34da6a3ce929d0e0e4736',
      '4bf92f3577b34da6a3ce929d0e0e4736',
    ]);
    const up = spans.find((s) => s.name === 'keygate.upstream')!;
    expect(up.spanContext().spanId).toBe(tp[2]);
  });

  it('a sampled root span keeps the trace id its decision was made on', async () => {
    const { tracing, spans } = tracingWith(ratio(0.5));
    const reference = new TraceIdRatioBasedSampler(0.5);
    const decided: [string, boolean][] = [];
    for (let i = 0; i < 200; i++) {
      const t = tracing.request(head({}), answered, 'GET', `rid${i}`);
      const flags = TRACEPARENT.exec(String(upstreamFields(t).traceparent))![3];
      decided.push([t.traceId, flags === '01']);
      t.end(outcome, 200);
    }
    await tracing.close();
    const exported = new Set(spans.map((s) => s.spanContext().traceId));
    for (const [id, sampled] of decided) {
      const expected = reference.shouldSample(ROOT_CONTEXT, id).decision === SamplingDecision.RECORD_AND_SAMPLED;
      expect([id, sampled, exported.has(id)]).toEqual([id, expected, expected]);
    }
    expect(decided.filter(([, s]) => s).length).toBeGreaterThan(50);
    expect(decided.filter(([, s]) => !s).length).toBeGreaterThan(50);
  });

  it("a sampled request's own resolver hands the gateway's events on, the key's last use included", async () => {
    const { tracing, spans } = tracingWith(ratio(1));
    const seen: string[] = [];
    const principal = { organizationId: 1, keyId: 2 } as Principal;
    const stores = { gate: async () => ({ kind: 'stale' }) } as unknown as SharedStores;
    const events: ResolverEvents = {
      cache: (hit) => seen.push(`cache ${hit}`),
      authFailure: (kind) => seen.push(`failure ${kind}`),
      used: (p, now) => seen.push(`used ${p.keyId} ${now}`),
    };
    tracing.resolvers(
      (st, ev) => ({
        resolve: async () => {
          await st.gate({} as GateRequest);
          ev.cache(true);
          ev.used?.(principal, 1_000);
          return { kind: 'invalid' };
        },
      }),
      stores,
      events,
    );
    const t = tracing.request(head({}), answered, 'GET', 'rid');
    expect(t.access).not.toBeNull();
    await t.access!.resolve('secret', [{ name: 'workspace', prefix: 'svc_ws_' }], '10.0.0.1', () => ({
      decision: null,
      counters: { spend: [] },
    }));
    t.end(outcome, 200);
    await tracing.close();
    expect(seen).toEqual(['cache true', 'used 2 1000']);
    expect(spans.map((s) => s.name).sort()).toEqual(['GET /v2/x', 'keygate.access', 'keygate.rate_limit']);
  });

  it('an invalid traceparent starts a new trace and the client tracestate does not travel', async () => {
    const { tracing } = tracingWith(ratio(0));
    const incoming = { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01', tracestate: 'a=b' };
    const t = tracing.request(head(incoming), answered, 'GET', 'rid');
    const out = upstreamFields(t, incoming);
    expect(String(out.traceparent)).toMatch(TRACEPARENT);
    expect(t.traceId).not.toBe('0'.repeat(32));
    expect(out.tracestate).toBeUndefined();
    await tracing.close();
  });

  it('reads the sampler as the SDK does', () => {
    const decide = (env: NodeJS.ProcessEnv, traceparentFlags: '00' | '01' | null) => {
      const { tracing } = tracingWith(samplerFromEnv(env));
      const headers =
        traceparentFlags === null
          ? {}
          : { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-${traceparentFlags}` };
      const t = tracing.request(head(headers), answered, 'GET', 'rid');
      return TRACEPARENT.exec(String(upstreamFields(t).traceparent))![3];
    };
    expect(decide({}, null)).toBe('01');
    expect(decide({}, '00')).toBe('00');
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_off' }, '01')).toBe('00');
    expect(decide({ OTEL_TRACES_SAMPLER: 'always_on' }, '00')).toBe('01');
    expect(decide({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }, null)).toBe('00');
    expect(decide({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' }, '01')).toBe('01');
    expect(decide({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, null)).toBe('00');
    expect(decide({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, '01')).toBe('01');
    expect(decide({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, '01')).toBe('00');
    // A missing or out-of-range ratio is 1, an unknown sampler parent-based always-on (the SDK's fallbacks).
    expect(decide({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '7' }, null)).toBe('01');
    expect(decide({ OTEL_TRACES_SAMPLER: 'traceidratio' }, null)).toBe('01');
    expect(decide({ OTEL_TRACES_SAMPLER: 'nonsense' }, '00')).toBe('00');
    expect(decide({ OTEL_TRACES_SAMPLER: 'nonsense' }, null)).toBe('01');
  });
});

describe('tracing through the real program', () => {
  it('exports the request, access, rate-limit and upstream spans; the upstream parent is the gateway span', async () => {
    const before = upstreamSeen.length;
    const res = await fetch(`${gateway}/v2/workspaces/100/accounts?secret=query`, {
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(res.status).toBe(200);
    const seen = upstreamSeen[before];
    const tp = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(seen.traceparent));
    expect(tp, `traceparent upstream: ${seen.traceparent}`).not.toBeNull();
    const [, traceId, parentId] = tp!;

    const got = await trace(traceId, 4);
    const byName = (n: string) => got.filter((s) => s.name === n);
    const request = got.find((s) => s.kind === 2)!; // SERVER
    expect(request, JSON.stringify(got.map((s) => s.name))).toBeDefined();
    expect(request.name).toBe('GET /v2/workspaces/{workspaceId}/accounts');
    expect(request.parentSpanId ?? '').toBe('');
    expect(attr(request, 'http.route')).toBe('/v2/workspaces/{workspaceId}/accounts');
    expect(attr(request, 'http.response.status_code')).toBe(200);
    expect(attr(request, 'keygate.organization_id')).toBe(1);
    expect(typeof attr(request, 'keygate.key_id')).toBe('number');

    const [access] = byName('keygate.access');
    expect(access.parentSpanId).toBe(request.spanId);
    expect(attr(access, 'keygate.access.source')).toBe('database'); // the key's first use
    const gate = byName('keygate.rate_limit');
    expect(gate.length).toBeGreaterThanOrEqual(1);
    for (const g of gate) expect(g.parentSpanId).toBe(access.spanId);
    const [up] = byName('keygate.upstream');
    expect(up.parentSpanId).toBe(request.spanId);
    expect(up.kind).toBe(3); // CLIENT
    expect(up.spanId).toBe(parentId);
    expect(attr(up, 'http.response.status_code')).toBe(200);

    // The second use comes from the principal cache, one gate round trip.
    const again = await fetch(`${gateway}/v2/workspaces/100/accounts`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(again.status).toBe(200);
    const id2 = String(upstreamSeen.at(-1)!.traceparent).split('-')[1];
    const got2 = await trace(id2, 4);
    expect(
      attr(
        got2.find((s) => s.name === 'keygate.access')!,
        'keygate.access.source',
      ),
    ).toBe('cache');
    expect(got2.filter((s) => s.name === 'keygate.rate_limit').map((s) => attr(s, 'keygate.rate_limit.op'))).toEqual([
      'gate',
    ]);
  }, 40_000);

  it('continues a valid incoming traceparent and passes its tracestate on', async () => {
    const incomingTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const incomingParent = '00f067aa0ba902b7';
    const before = upstreamSeen.length;
    const res = await fetch(`${gateway}/v2/workspaces/100/accounts`, {
      headers: {
        authorization: `Bearer ${KEY}`,
        traceparent: `00-${incomingTrace}-${incomingParent}-01`,
        tracestate: 'vendor=abc',
      },
    });
    expect(res.status).toBe(200);
    const seen = upstreamSeen[before];
    expect(String(seen.traceparent).split('-')[1]).toBe(incomingTrace);
    expect(String(seen.traceparent).split('-')[2]).not.toBe(incomingParent);
    expect(seen.tracestate).toBe('vendor=abc');
    const got = await trace(incomingTrace, 4);
    const request = got.find((s) => s.kind === 2)!;
    expect(request.parentSpanId).toBe(incomingParent);
  }, 40_000);

  it('propagates an unsampled incoming trace without recording it, and logs its trace id', async () => {
    const incomingTrace = '0af7651916cd43dd8448eb211c80319c';
    const before = upstreamSeen.length;
    const res = await fetch(`${gateway}/v2/workspaces/100/accounts`, {
      headers: { authorization: `Bearer ${KEY}`, traceparent: `00-${incomingTrace}-b7ad6b7169203331-00` },
    });
    expect(res.status).toBe(200);
    const tp = TRACEPARENT.exec(String(upstreamSeen[before].traceparent));
    expect(tp, String(upstreamSeen[before].traceparent)).not.toBeNull();
    expect([tp![1], tp![3]]).toEqual([incomingTrace, '00']);
    expect(tp![2]).not.toBe('0000000000000000');
    const line = await accessLine(incomingTrace);
    expect(line?.status).toBe(200);
    // A sampled request sent after it is exported; the unsampled one never is.
    const later = await fetch(`${gateway}/v2/workspaces/100/accounts`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(later.status).toBe(200);
    await trace(String(upstreamSeen.at(-1)!.traceparent).split('-')[1], 4);
    expect(spans.filter((s) => s.traceId === incomingTrace)).toEqual([]);
  }, 40_000);

  it('starts a new trace for an invalid traceparent', async () => {
    const before = upstreamSeen.length;
    await fetch(`${gateway}/v2/workspaces/100/accounts`, {
      headers: {
        authorization: `Bearer ${KEY}`,
        traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      },
    });
    const tp = String(upstreamSeen[before].traceparent);
    expect(tp).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(tp.split('-')[1]).not.toBe('00000000000000000000000000000000');
  });

  it('traces a refused request, with its refusal code, and logs the trace id in the access line', async () => {
    const incomingTrace = 'aaaabbbbccccddddeeeeffff00001111';
    const res = await fetch(`${gateway}/v2/workspaces/100/accounts`, {
      headers: {
        authorization: 'Bearer svc_ws_NotAKeyThatExists000000000000000000001',
        traceparent: `00-${incomingTrace}-1111222233334444-01`,
      },
    });
    expect(res.status).toBe(401);
    const got = await trace(incomingTrace, 2);
    const request = got.find((s) => s.kind === 2)!;
    expect(attr(request, 'keygate.refusal_code')).toBe('150002');
    expect(attr(request, 'http.response.status_code')).toBe(401);
    expect(got.some((s) => s.name === 'keygate.upstream')).toBe(false);
    const line = await accessLine(incomingTrace);
    expect(line, 'an access line with the trace id').toBeDefined();
    expect(line!.status).toBe(401);
  }, 40_000);

  it('never exports a secret or the query string', async () => {
    const all = rawExports.join('\n');
    expect(all.length).toBeGreaterThan(0);
    expect(all).toContain('keygate-under-test');
    expect(all).not.toContain(KEY);
    expect(all).not.toContain('svc_ws_NotAKeyThatExists');
    expect(all).not.toContain('secret=query');
    expect(all).not.toMatch(/x-gateway-signature/i);
  }, 40_000);
});
