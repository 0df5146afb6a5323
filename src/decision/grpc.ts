// Envoy's gRPC external authorization (envoy.service.auth.v3.Authorization/Check) on
// DECISION_GRPC_PORT: each CheckRequest is described (./grpc-mapping.ts) and decided by the gateway's
// own pipeline (./decide.ts), spending every layer once; the decision is the CheckResponse
// (docs/forward-auth-grpc.md).
import {
  Server,
  ServerCredentials,
  status as grpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import type { GatewayDeps } from '../gateway/context.js';
import { listenError } from '../config/errors.js';
import { decide } from './decide.js';
import { authorizationService, type CheckRequest, type CheckResponse } from './grpc-proto.js';
import { checkResponse, describedRequest, InvalidCheck } from './grpc-mapping.js';

export interface GrpcDecision {
  /** host:port it listens on. */
  address: string;
  /** Stop taking calls; those in flight are answered within `ms`. */
  close(ms: number): Promise<void>;
}

/**
 * A CheckRequest is the request's fields and a few words: 1 MiB holds any request within Node's 16 KiB
 * header limit many times over (keygate reads no body: leave ext_authz's with_request_body off). A
 * larger one is refused by grpc-js with RESOURCE_EXHAUSTED before it is decoded.
 */
export const MAX_CHECK_BYTES = 1024 * 1024;
/** The largest answer keygate gives itself is the API description (config/openapi/v2.json, ~280 KB). */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** Envoy multiplexes its checks on few connections; past this many at once it opens another. */
const MAX_CONCURRENT_STREAMS = 1000;

/** What the request deserializer returns for bytes that do not decode: answered INVALID_ARGUMENT. */
const MALFORMED = Symbol('malformed CheckRequest');

export async function startGrpcDecision(
  deps: GatewayDeps,
  where: { host: string; port: number },
): Promise<GrpcDecision> {
  const service = authorizationService();
  const check = service.Check!;
  // grpc-js answers a request it cannot deserialize with INTERNAL; a malformed request is the caller's
  // fault, so the decoding failure is carried to the handler and answered INVALID_ARGUMENT.
  const lenient: ServiceDefinition = {
    Check: {
      ...check,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return check.requestDeserialize(bytes);
        } catch {
          return MALFORMED;
        }
      },
    },
  };
  const server = new Server({
    'grpc.max_receive_message_length': MAX_CHECK_BYTES,
    'grpc.max_send_message_length': MAX_RESPONSE_BYTES,
    'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
  });
  server.addService(lenient, {
    Check: (
      call: ServerUnaryCall<CheckRequest | typeof MALFORMED, CheckResponse>,
      done: sendUnaryData<CheckResponse>,
    ) => void answerCheck(deps, call, done),
  });
  const bound = await bind(server, where.host, where.port);
  const shown = where.host === '0.0.0.0' ? '127.0.0.1' : where.host === '::' ? '::1' : where.host;
  return {
    address: `${shown.includes(':') ? `[${shown}]` : shown}:${bound}`,
    close: (ms) => closeGracefully(server, ms),
  };
}

async function answerCheck(
  deps: GatewayDeps,
  call: ServerUnaryCall<CheckRequest | typeof MALFORMED, CheckResponse>,
  done: sendUnaryData<CheckResponse>,
): Promise<void> {
  if (call.request === MALFORMED) {
    return done({ code: grpcStatus.INVALID_ARGUMENT, details: 'the CheckRequest does not decode' });
  }
  // A call its caller has given up on is not decided: deciding spends, and nobody would read the answer.
  const deadline = call.getDeadline();
  if (call.cancelled || (deadline instanceof Date ? deadline.getTime() : deadline) <= Date.now()) {
    return done({ code: grpcStatus.DEADLINE_EXCEEDED, details: 'the deadline passed before the check began' });
  }
  try {
    const described = describedRequest(call.request, call.getPeer(), deps.trusted);
    done(null, checkResponse(await decide(deps, described), described.headers));
  } catch (err) {
    if (err instanceof InvalidCheck) return done({ code: grpcStatus.INVALID_ARGUMENT, details: err.message });
    // decide() answers its own failures; this is a defect of the mapping. The request's fields (its key)
    // stay out of the log.
    deps.log.error({ err: { message: (err as Error).message } }, 'gRPC decision failed');
    done({ code: grpcStatus.INTERNAL, details: 'internal error' });
  }
}

function bind(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${port}`,
      ServerCredentials.createInsecure(),
      (err, bound) => {
        if (!err) return resolve(bound);
        // grpc-js reports the socket's error code in its message only.
        const code = /E[A-Z]+/.exec(err.message)?.[0];
        reject(listenError('DECISION_GRPC_PORT', host, port, code ? Object.assign(err, { code }) : err));
      },
    );
  });
}

/** No new call is taken; those in flight finish; after `ms` the rest are cancelled. */
function closeGracefully(server: Server, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, ms);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
