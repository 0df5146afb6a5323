// CPU per request of the tracing hooks (src/ops/tracing-otel.ts) as the gateway calls them: the request's
// trace (from a head without traceparent: sampled or not), a sampled request's own resolver with its gate span, the upstream
// exchange's span or its traceparent alone, and the end; spans exported by the SDK's batch processor
// into an exporter that drops them. Each simulated request awaits one promise (its store call), as
// the gateway's do; the "off" loop does the same without the hooks. Prints the median of ROUNDS turns
// of BURST requests, microseconds per request, for each sampling ratio.
//   npx tsx bench/diagnostics/tracing-cost.ts
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Tracing } from '../../src/ops/tracing.js';
import { createTracing } from '../../src/ops/tracing-otel.js';
import type { AccessResolver } from '../../src/access/resolver.js';
import type { SharedStores } from '../../src/limits/types.js';

const BURST = Number(process.env.BURST ?? 20);
const ROUNDS = Number(process.env.ROUNDS ?? 3000);

const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
const state = { limit: 20, used: 1, remaining: 19, reset: 0 };
const stores = {
  gate: async () => ({ kind: 'spent', hit: { key: state, ip: state } }),
  limiter: { spend: async () => [state, state] },
} as unknown as SharedStores;
const events = { cache: () => {}, authFailure: () => {} };
const resolved = {
  kind: 'resolved',
  principal: { organizationId: 1, keyId: 1 },
  decision: null,
  states: [state, state],
  spent: true,
};
const makeResolver = (st: SharedStores): AccessResolver => ({
  resolve: async () => (await st.gate({} as never), resolved) as never,
});
const base = makeResolver(stores);
// The forwarder's part is the upstream request's fields; the exchange itself is not tracing's cost.
const forward = (headers: OutgoingHttpHeaders) => headers;

function tracingAt(ratio: number): Tracing<AccessResolver> {
  const tracing = createTracing<AccessResolver>({
    processor: new BatchSpanProcessor(dropping),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
    serviceName: 'bench',
  });
  tracing.resolvers(makeResolver, stores, events);
  return tracing;
}

async function request(t: Tracing<AccessResolver> | null): Promise<void> {
  const req = { headers: { host: 'x', authorization: 'Bearer k' } } as unknown as IncomingMessage;
  const res = {
    headersSent: true,
    statusCode: 200,
    once: (_event: string, fn: () => void) => queueMicrotask(fn),
  } as unknown as ServerResponse;
  const span = t ? t.request(req, res, 'GET', 'rid') : null;
  await (span?.access ?? base).resolve('k', [{ name: 'workspace', prefix: 'svc_ws_' }], '10.0.0.1', () => ({
    decision: null,
    counters: { spend: [] },
  }));
  const headers: OutgoingHttpHeaders = { 'x-request-id': 'rid' };
  span?.upstream(headers);
  forward(headers);
  span?.end({ route: '/v2/workspaces/{workspaceId}/tags', code: null, organizationId: 1, keyId: 1 }, 200);
}

async function measure(t: Tracing<AccessResolver> | null): Promise<number> {
  const perRequest: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.cpuUsage();
    await Promise.all(Array.from({ length: BURST }, () => request(t)));
    const used = process.cpuUsage(start);
    perRequest.push((used.user + used.system) / BURST);
    if (r % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  perRequest.sort((a, b) => a - b);
  return perRequest[perRequest.length >> 1];
}

/** Each sampling ratio's median CPU per request and what it adds to the hooks-free loop, in µs. */
export async function tracingHooksCost(): Promise<{ name: string; us: number; addedUs: number; passes: number[] }[]> {
  const configs: [string, Tracing<AccessResolver> | null][] = [
    ['off', null],
    ['1 %', tracingAt(0.01)],
    ['10 %', tracingAt(0.1)],
    ['100 %', tracingAt(1)],
  ];
  // Warm-up, then interleaved passes; the median pass of each.
  for (const [, t] of configs) await measure(t);
  const results = new Map<string, number[]>(configs.map(([n]) => [n, []]));
  for (let pass = 0; pass < 5; pass++) for (const [n, t] of configs) results.get(n)!.push(await measure(t));
  for (const [, t] of configs) await t?.close();
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const off = med(results.get('off')!);
  return configs.map(([name]) => {
    const us = med(results.get(name)!);
    return { name, us, addedUs: us - off, passes: results.get(name)! };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  for (const { name, us, addedUs, passes } of await tracingHooksCost())
    console.log(
      `${name.padEnd(6)} ${us.toFixed(2).padStart(6)} µs/request   added ${addedUs.toFixed(2).padStart(5)} µs   [${passes
        .map((x) => x.toFixed(2))
        .join(', ')}]`,
    );
