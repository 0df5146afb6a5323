// The interfaces of the profile in force, as the pipeline's phases use them (./pipeline.ts): each
// InterfaceSpec (docs/profiles.md) with the functions its model chooses. Built once per profile object,
// so a reload that brings a new profile brings new interfaces and the request path reads no table.
import type { IncomingMessage } from 'node:http';
import type { Principal } from '../access/principal.js';
import type { InterfaceSpec, Profile } from '../config/profile/types.js';
import {
  decideConsumer,
  decideV1,
  decideV2,
  type Decision,
  type Layers,
  type Policy,
  type RequestFacts,
} from './decisions.js';
import type { Refusal } from './refusal.js';

export interface GatewayInterface {
  readonly spec: InterfaceSpec;
  readonly id: string;
  /** The prefix and a slash: a path is the interface's when it is the prefix or starts with this. */
  readonly prefixSlash: string;
  /** Read the key: the secret the request presents, or null. */
  readKey(req: IncomingMessage): string | null;
  /** The refusal of a request without a key. */
  readonly missingKey: Refusal;
  /** Authorize: the pure decision on a resolved principal (./decisions.ts). */
  decide(principal: Principal, request: RequestFacts, policy: Policy): Decision;
  readonly layers: Layers;
  /** The metrics' label of the key's layer. */
  readonly keyMetric: string;
}

const BEARER = /^Bearer +(\S+)$/i;

/** `Authorization: Bearer <secret>`, one or more spaces after the scheme (RFC 9110 section 11.4, RFC 6750 section 2.1). */
function bearerSecret(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  const m = auth ? BEARER.exec(auth) : null;
  return m ? m[1] : null;
}

/** The key alone in a named field (`X-Api-Key` on /v1). */
const fieldSecret = (name: string) => (req: IncomingMessage) => {
  const key = req.headers[name];
  return typeof key === 'string' && key !== '' ? key : null;
};

/** A field's name as it is usually written (`x-api-key` as `X-Api-Key`), for messages. */
const displayName = (name: string) =>
  name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

const DECIDE = { 'workspace-v2': decideV2, 'workspace-v1': decideV1, consumer: decideConsumer } as const;

export function gatewayInterface(spec: InterfaceSpec): GatewayInterface {
  const single = spec.keyLimit !== null;
  return {
    spec,
    id: spec.id,
    prefixSlash: spec.prefix + '/',
    readKey: spec.key.bearer ? bearerSecret : fieldSecret(spec.key.header),
    missingKey: spec.key.bearer
      ? spec.model === 'workspace-v2'
        ? { code: '150001' }
        : { code: '150001', message: 'Send the API key as Authorization: Bearer <key>.' }
      : { code: '150001', message: `Missing ${displayName(spec.key.header)} header.` },
    decide: DECIDE[spec.model],
    layers: { address: spec.addressLimit !== null, single: single ? 'partner' : null },
    keyMetric: single ? spec.id : 'key',
  };
}

const built = new WeakMap<Profile, readonly GatewayInterface[]>();
// Every request asks for the profile in force, nearly always the one asked for last.
let lastProfile: Profile | null = null;
let lastInterfaces: readonly GatewayInterface[] = [];

/** The profile's interfaces, built once per profile object. */
export function interfacesOf(profile: Profile): readonly GatewayInterface[] {
  if (profile === lastProfile) return lastInterfaces;
  let out = built.get(profile);
  if (!out) built.set(profile, (out = profile.interfaces.map(gatewayInterface)));
  lastProfile = profile;
  return (lastInterfaces = out);
}

/** The interface a path belongs to, or null when it is outside every one. */
export function interfaceFor(interfaces: readonly GatewayInterface[], path: string): GatewayInterface | null {
  for (const i of interfaces) if (path === i.spec.prefix || path.startsWith(i.prefixSlash)) return i;
  return null;
}

/**
 * A request's interface and whether its path is served: a path outside every interface is answered 404
 * in the envelope of the profile's first interface (the workspace API's /v2).
 */
export function requestInterface(profile: Profile, path: string): { iface: GatewayInterface; served: boolean } {
  const interfaces = interfacesOf(profile);
  const iface = interfaceFor(interfaces, path);
  return iface ? { iface, served: true } : { iface: interfaces[0], served: false };
}
