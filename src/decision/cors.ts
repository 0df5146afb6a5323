// CORS on a described request, as the gateway's listener applies it before its pipeline
// (serve() in src/gateway/server.ts, src/gateway/cors.ts): the proxy asking describes a browser's request, so a
// preflight is answered as keygate's proxy answers it, and other answers carry the same fields.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayDeps } from '../gateway/context.js';
import type { ResponseFields } from '../gateway/fields.js';
import { REQUEST_ID } from '../config/contract.js';
import { decide, type Decision, type DecisionRequest } from './decide.js';

/**
 * The decision with CORS as the gateway's listener applies it before the pipeline (src/gateway/cors.ts):
 * a preflight of the described request is answered (204, counted as the gateway counts one) without a
 * decision, and any other answer to an allowed origin carries the same Access-Control-* fields.
 */
export async function decideWithCors(deps: GatewayDeps, r: DecisionRequest): Promise<Decision> {
  const started = performance.now();
  const req = { method: r.method, headers: r.headers } as IncomingMessage;
  const cors = new FieldRecorder();
  if (deps.cors.preflight(req, cors.response)) {
    deps.metrics.request('preflight', r.method, cors.status, null, performance.now() - started);
    const sent = r.headers['x-request-id'];
    const requestId = typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
    return { kind: 'answer', requestId, status: cors.status, fields: cors.fields, body: Buffer.alloc(0) };
  }
  deps.cors.decorate(req, cors.response);
  const d = await decide(deps, r);
  if (cors.fields.length === 0) return d;
  if (d.kind === 'allow') return { ...d, clientFields: [...d.clientFields, ...cors.fields] };
  return { ...d, fields: [...d.fields, ...cors.fields] };
}

/** What src/gateway/cors.ts writes on a response: setHeader calls, and a preflight's writeHead. */
class FieldRecorder {
  status = 200;
  fields: ResponseFields = [];
  readonly response = {
    setHeader: (name: string, value: string | number) => void this.fields.push(name, value),
    writeHead: (status: number, more?: Record<string, string | number>) => {
      this.status = status;
      for (const name in more) this.fields.push(name, more[name]);
    },
    end: () => undefined,
  } as unknown as ServerResponse;
}
