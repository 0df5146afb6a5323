// CORS on a described request, as the gateway's listener applies it before its pipeline
// (serve() in src/gateway/server.ts, src/gateway/cors.ts): the proxy asking describes a browser's request, so a
// preflight is answered as keygate's proxy answers it, and other answers carry the same fields.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayDeps } from '../gateway/context.js';
import type { ResponseFields } from '../gateway/fields.js';
import { REQUEST_ID } from '../config/contract.js';
import { accessLogWriter } from '../ops/logger.js';
import { decide, type Decision, type DecisionRequest } from './decide.js';

/** Decides a described request; one per listener (it holds the access log's writer). */
export type Decider = (r: DecisionRequest) => Promise<Decision>;

/**
 * The decision with CORS as the gateway's listener applies it before the pipeline (src/gateway/cors.ts):
 * a preflight of the described request is answered (204) without a decision, counted and logged as the
 * gateway counts one, and any other answer to an allowed origin carries the same Access-Control-* fields.
 */
export function decider(deps: GatewayDeps): Decider {
  const writeAccess = deps.accessLog ? accessLogWriter(deps.log) : null;
  return async (r) => {
    const started = performance.now();
    const req = { method: r.method, headers: r.headers } as IncomingMessage;
    const cors = new FieldRecorder();
    if (deps.cors.preflight(req, cors.response)) {
      const sent = r.headers['x-request-id'];
      const requestId = typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
      const ms = performance.now() - started;
      deps.metrics.request('preflight', r.method, cors.status, null, ms);
      writeAccess?.({
        requestId,
        method: r.method,
        route: 'preflight',
        status: cors.status,
        code: null,
        ms,
        organizationId: null,
        keyId: null,
      });
      return { kind: 'answer', requestId, status: cors.status, fields: cors.fields, body: Buffer.alloc(0) };
    }
    deps.cors.decorate(req, cors.response);
    const d = await decide(deps, r, writeAccess);
    if (cors.fields.length === 0) return d;
    if (d.kind === 'allow') return { ...d, clientFields: [...d.clientFields, ...cors.fields] };
    return { ...d, fields: [...d.fields, ...cors.fields] };
  };
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
