// Envoy's published external authorization API, as @grpc/grpc-js-xds ships it (its deps/ hold the
// envoy-api, googleapis, xds and protoc-gen-validate trees), beside keygate's own subset (proto/):
// the tests encode with one and decode with the other.
import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { authorizationService, CHECK_PROTO } from '../../src/decision/grpc-proto.js';

const DEPS = fileURLToPath(new URL('../../node_modules/@grpc/grpc-js-xds/deps/', import.meta.url));

/** Envoy's Authorization service, from the published .proto files and every file they import. */
export function publishedService(): ServiceDefinition {
  const trees = ['envoy-api', 'googleapis', 'xds', 'protoc-gen-validate'].map((t) => `${DEPS}${t}/`);
  return authorizationService(trees[0], CHECK_PROTO, trees);
}

export const oursService = (): ServiceDefinition => authorizationService();
