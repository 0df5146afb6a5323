// Envoy's external authorization messages (proto/envoy/service/auth/v3/external_auth.proto, our own
// subset of Envoy's published API, wire-compatible with it) as grpc-js serves them, and their shapes
// as @grpc/proto-loader decodes them with LOAD_OPTIONS.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';

export const CHECK_PROTO = 'envoy/service/auth/v3/external_auth.proto';
export const CHECK_METHOD = '/envoy.service.auth.v3.Authorization/Check';

/**
 * proto/ beside the compiled modules (dist/proto: `npm run build` copies it there, and the image holds
 * dist/ alone), else the package's own when running from src/. Found from this module's URL, so the
 * program runs from any working directory.
 */
export function protoDir(): string {
  for (const rel of ['../proto/', '../../proto/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}${CHECK_PROTO}`)) return dir;
  }
  throw new Error(`${CHECK_PROTO} not found beside the program (npm run build copies proto/ into dist/)`);
}

/** Field names as in the .proto (snake_case), int64 as a number, enums as numbers, no defaults filled in. */
export const LOAD_OPTIONS: Options = { keepCase: true, longs: Number, enums: Number, defaults: false, oneofs: true };

/** The Authorization service of `dir` (our proto/ by default; the tests load Envoy's published one too). */
export function authorizationService(
  dir = protoDir(),
  file = CHECK_PROTO,
  includeDirs: string[] = [dir],
): ServiceDefinition {
  const pkg = loadSync(`${dir}${file}`, { ...LOAD_OPTIONS, includeDirs });
  return pkg['envoy.service.auth.v3.Authorization'] as unknown as ServiceDefinition;
}

export interface HeaderValue {
  key?: string;
  value?: string;
  raw_value?: Buffer;
}

export interface HeaderValueOption {
  header: HeaderValue;
  append?: { value?: boolean };
  append_action?: number;
}

/** CheckRequest as decoded: every field may be missing. */
export interface CheckRequest {
  attributes?: {
    source?: { address?: { socket_address?: { address?: string; port_value?: number } } };
    request?: {
      http?: {
        method?: string;
        headers?: Record<string, string>;
        header_map?: { headers?: HeaderValue[] };
        path?: string;
        host?: string;
        size?: number;
      };
    };
  };
}

export interface CheckResponse {
  status: { code: number; message?: string };
  ok_response?: {
    headers: HeaderValueOption[];
    headers_to_remove: string[];
    response_headers_to_add: HeaderValueOption[];
  };
  denied_response?: { status: { code: number }; headers: HeaderValueOption[]; body: string };
}
