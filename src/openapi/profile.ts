// The API description (OpenAPI 3.1) of a profile's problem-details interface, generated from the profile
// itself (docs/profiles.md): every route with its typed path parameters, scope and bucket; the security
// scheme of its key presentation; the rate-limit fields of its header families; each refusal the route can
// give as RFC 9457 problem details with the profile's status, type and title; the body of the status route
// the gateway answers. The upstream services' own bodies are theirs and not described. The workspace API's
// documents (config/openapi/, ./generate.ts) are checked in and served as files; this one is made in memory
// from the profile in force, so it cannot drift from it either.
import type { InterfaceSpec, Profile, ProblemAnswer } from '../config/profile/types.js';
import { REFUSAL_NAMES, type RefusalName } from '../config/profile/refusals.js';
import type { RouteDef } from '../config/routes.js';
import { REQUEST_ID_SOURCE, WINDOW_SECONDS } from '../config/contract.js';
import { ID_PARAM, STRING_PARAM, operationId, serialize } from './generate.js';

type Json = Record<string, unknown>;
type Problems = Record<RefusalName, ProblemAnswer>;

const REF = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const int = { type: 'integer' };
const SCHEME = 'apiKey';

/**
 * The refusals any keyed request can meet, whatever its route (docs/profiles.md, Refusals): the head's
 * checks, the key's, the consumer's state, and the answers of a gateway short of a store or shutting down.
 */
const EVERY_ROUTE: readonly RefusalName[] = [
  'invalid_request',
  'uri_too_long',
  'payload_too_large',
  'missing_key',
  'invalid_key',
  'too_many_failures',
  'access_disabled',
  'subscription_paused',
  'limiter_unavailable',
  'access_store_unavailable',
  'service_unavailable',
  'internal_error',
];
/** What only a route that spends (the limits) and is forwarded (the body, the upstream) adds. */
const FORWARDED: readonly RefusalName[] = [
  'rate_limited',
  'quota_exhausted',
  'request_timeout',
  'bad_gateway',
  'gateway_timeout',
];

/** The refusals one route can answer with, in the order of docs/profiles.md. */
export function routeRefusals(route: Pick<RouteDef, 'scope' | 'gateway'>): RefusalName[] {
  const names = new Set<RefusalName>(EVERY_ROUTE);
  if (route.scope !== null) names.add('insufficient_scope');
  if (!route.gateway) for (const n of FORWARDED) names.add(n);
  return REFUSAL_NAMES.filter((n) => names.has(n));
}

/** `x-api-key` -> `X-Api-Key`: a field's name as documents usually spell it (fields are case-insensitive). */
const fieldName = (lower: string) =>
  lower
    .split('-')
    .map((w) => (w ? w[0].toUpperCase() + w.slice(1) : w))
    .join('-');

function securityScheme(iface: InterfaceSpec): Json {
  const prefixes = iface.keyTypes.map((t) => `${t.prefix} (${t.name})`).join(' or ');
  if (iface.key.bearer)
    return {
      type: 'http',
      scheme: 'bearer',
      description: `Authorization: Bearer <key>; a key starts with ${prefixes}.`,
    };
  const name = fieldName(iface.key.header);
  return { type: 'apiKey', in: 'header', name, description: `${name}: <key>; a key starts with ${prefixes}.` };
}

/** The header names an answer may carry: the request id, the families' fields, Retry-After on 429. */
function headerNames(iface: InterfaceSpec, status: number): string[] {
  const names = ['X-Request-Id'];
  if (iface.headers.xRateLimit) {
    names.push('X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset');
    if (iface.addressLimit !== null) names.push('X-RateLimit-IP-Limit', 'X-RateLimit-IP-Remaining');
  }
  if (iface.headers.ietf) names.push('RateLimit-Policy', 'RateLimit');
  if (status === 429) names.push('Retry-After');
  return names;
}

const responseHeaders = (iface: InterfaceSpec, status: number) =>
  Object.fromEntries(headerNames(iface, status).map((n) => [n, REF('headers', n)]));

/** The policy names of RateLimit-Policy: the key's layer, the address's, the month's. */
function policyNames(iface: InterfaceSpec): string {
  const key = iface.keyLimit === null ? '"read", "write" or "bulk" (the route\'s bucket)' : '"key"';
  return `${key}${iface.addressLimit === null ? '' : ', "ip"'}`;
}

function headerComponents(iface: InterfaceSpec): Record<string, Json> {
  const h = (description: string, schema: Json = int) => ({ description, schema });
  const keyLayer =
    iface.keyLimit === null
      ? "the key's budget for the route's bucket (the key's or consumer's override when one is set, else the plan's)"
      : `the key's ${iface.keyLimit} per minute`;
  const all: Record<string, Json> = {
    'X-Request-Id': h(`The request id (kept from the client when it matches ${REQUEST_ID_SOURCE}).`, {
      type: 'string',
    }),
    'X-RateLimit-Limit': h(`The limit of the key's layer: ${keyLayer}.`),
    'X-RateLimit-Remaining': h("Requests left in the key's layer this window."),
    'X-RateLimit-Reset': h(
      `Unix time in seconds when the window resets (fixed ${WINDOW_SECONDS}-second windows on the wall-clock minute).`,
    ),
    'X-RateLimit-IP-Limit': h(`The per-address ceiling (${iface.addressLimit} per minute, across keys).`),
    'X-RateLimit-IP-Remaining': h('Requests left for the client address this window.'),
    'RateLimit-Policy': h(
      `The policies of draft-ietf-httpapi-ratelimit-headers, one per layer: ${policyNames(iface)}; q is the limit, w the window in seconds. A consumer with a monthly quota gets another policy, "month" (q the quota, w the seconds of the calendar month, UTC).`,
      { type: 'string' },
    ),
    RateLimit: h("The draft's remaining (r) and seconds until reset (t) of each policy.", { type: 'string' }),
    'Retry-After': h('On 429: seconds to wait, at least 1.', { type: 'integer', minimum: 1 }),
  };
  const names = new Set(headerNames(iface, 429));
  return Object.fromEntries(Object.entries(all).filter(([n]) => names.has(n)));
}

/** RFC 9457 problem details, with the members the gateway adds (`code`, `request_id`). */
const PROBLEM: Json = {
  type: 'object',
  description: 'Problem details (RFC 9457), as the gateway answers every refusal of its own.',
  properties: {
    type: { type: 'string', format: 'uri', description: "The problem type: the profile's type base and the code." },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 100, maximum: 599 },
    detail: { type: 'string' },
    instance: { type: 'string', format: 'uri-reference' },
    code: { type: 'string', description: "The refusal's code, unique in the profile." },
    request_id: { type: 'string', description: 'Equals the X-Request-Id field of the answer.' },
  },
  required: ['type', 'title', 'status', 'code'],
};

/** A refusal's exact answer: the problem schema with its type, status, title and code fixed. */
const problemOf = (p: ProblemAnswer): Json => ({
  allOf: [
    REF('schemas', 'Problem'),
    {
      properties: {
        type: { const: p.type },
        title: { const: p.title },
        status: { const: p.status },
        code: { const: p.code },
      },
    },
  ],
});

/** One response per status and set of refusals: `Problem401` for all of them, a suffix for a subset. */
class ProblemResponses {
  readonly components: Record<string, Json> = {};
  private readonly byNames = new Map<string, string>();

  constructor(
    private readonly iface: InterfaceSpec,
    private readonly problems: Problems,
  ) {}

  /** The operation's `responses` entries for `names`, by status, each a reference to a component. */
  refs(names: RefusalName[]): Record<string, Json> {
    const byStatus = new Map<number, RefusalName[]>();
    for (const n of names) {
      const s = this.problems[n].status;
      byStatus.set(s, [...(byStatus.get(s) ?? []), n]);
    }
    const out: Record<string, Json> = {};
    for (const [status, group] of [...byStatus].sort((a, b) => a[0] - b[0]))
      out[String(status)] = REF('responses', this.component(status, group));
    return out;
  }

  private component(status: number, group: RefusalName[]): string {
    const id = `${status}:${group.join(',')}`;
    const known = this.byNames.get(id);
    if (known) return known;
    const taken = Object.keys(this.components).filter((k) => k.startsWith(`Problem${status}`)).length;
    const name = taken === 0 ? `Problem${status}` : `Problem${status}_${taken + 1}`;
    this.byNames.set(id, name);
    const variants = group.map((n) => problemOf(this.problems[n]));
    this.components[name] = {
      description: group.map((n) => `${this.problems[n].code}: ${this.problems[n].title}`).join(' '),
      headers: responseHeaders(this.iface, status),
      content: {
        'application/problem+json': { schema: variants.length === 1 ? variants[0] : { oneOf: variants } },
      },
    };
    return name;
  }
}

/** What the gateway's status route reports for the calling key, read without spending. */
function rateLimitStatus(profile: Profile, iface: InterfaceSpec): Json {
  const layerProps = { limit: int, used: int, remaining: int, reset: int };
  const layer = { type: 'object', properties: layerProps, required: Object.keys(layerProps) };
  const month = {
    ...layer,
    description:
      "The consumer's monthly request quota (calendar month, UTC), when it has one; reset is the month's end.",
  };
  if (iface.keyLimit !== null)
    return {
      type: 'object',
      description: 'What the status route reports for the calling key: its one layer, read without spending.',
      properties: { ...layerProps, windowSeconds: int, month },
      required: [...Object.keys(layerProps), 'windowSeconds'],
    };
  const bucketLayer = {
    ...layer,
    properties: { ...layerProps, source: { type: 'string', enum: ['key', 'organization'] } },
  };
  const properties: Json = {
    plan: { type: 'string', enum: Object.keys(profile.plans) },
    windowSeconds: int,
    buckets: {
      type: 'object',
      properties: { read: bucketLayer, write: bucketLayer, bulk: bucketLayer },
      required: ['read', 'write', 'bulk'],
    },
  };
  if (iface.addressLimit !== null) properties.ip = layer;
  properties.month = month;
  return {
    type: 'object',
    description:
      'What the status route reports for the calling key: each bucket, the address layer and the month, read without spending.',
    properties,
    required: ['plan', 'windowSeconds', 'buckets', ...(iface.addressLimit !== null ? ['ip'] : [])],
  };
}

function routeDescription(r: RouteDef): string {
  const scope = r.scope === null ? 'Any valid key may call it.' : `The key must hold the scope \`${r.scope}\`.`;
  const how = r.gateway
    ? "Answered by the gateway: the key's limits, read without spending."
    : `Spends one request of the key's \`${r.bucket}\` budget; forwarded to the service \`${r.service?.name ?? 'default'}\`.`;
  return `${scope} ${how}`;
}

function parameters(path: string): Json[] {
  return [...path.matchAll(/\{([A-Za-z]+)(:str)?\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: m[2] ? STRING_PARAM : ID_PARAM,
  }));
}

/** The plans' budgets, as the document's description lists them. */
function planLines(profile: Profile): string {
  return Object.entries(profile.plans)
    .map(
      ([name, p]) =>
        `- \`${name}\`: ${p.read} read, ${p.write} write, ${p.bulk} bulk per minute` +
        (p.monthlyQuota === undefined ? '' : `; ${p.monthlyQuota} requests per month`),
    )
    .join('\n');
}

function operation(iface: InterfaceSpec, r: RouteDef, problems: ProblemResponses, skip: number): Json {
  const op: Json = {
    operationId: operationId(r.method, r.path, skip),
    description: routeDescription(r),
    parameters: parameters(r.path),
  };
  const responses: Record<string, Json> = {};
  if (r.gateway)
    responses['200'] = {
      description: "The calling key's limits.",
      headers: responseHeaders(iface, 200),
      content: { 'application/json': { schema: REF('schemas', 'RateLimitStatus') } },
    };
  else
    responses['2XX'] = {
      description: `The service's answer, forwarded (the service \`${r.service?.name ?? 'default'}\` describes its bodies).`,
      headers: responseHeaders(iface, 200),
    };
  Object.assign(responses, problems.refs(routeRefusals(r)));
  op.responses = responses;
  // A scheme of any type may list the roles an operation requires (OpenAPI 3.1, Security Requirement Object).
  if (r.scope !== null) op.security = [{ [SCHEME]: [r.scope] }];
  op['x-keygate-scope'] = r.scope;
  op['x-keygate-bucket'] = r.bucket;
  op['x-keygate-answered-by'] = r.gateway ? 'gateway' : 'upstream';
  op['x-keygate-spends'] = !r.gateway;
  if (!r.gateway) op['x-keygate-service'] = r.service?.name ?? 'default';
  return op;
}

/** The OpenAPI 3.1 document of one problem-details interface of `profile`. */
export function generateProfileOpenApi(profile: Profile, iface: InterfaceSpec): Json {
  if (iface.errors.format !== 'problem')
    throw new Error(
      `openapi: the interface ${iface.id} answers ${iface.errors.format} envelopes (its document is config/openapi/${iface.id}.json)`,
    );
  const table = profile.routes.tables[iface.id];
  if (!table) throw new Error(`openapi: the profile ${profile.name} has no route table for ${iface.id}`);
  const problems = new ProblemResponses(iface, iface.errors.problems);
  const skip = iface.prefix.split('/').length;
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of table.all) {
    const p = r.path.replace(/:str\}/g, '}');
    const ops = (paths[p] ??= {});
    const method = r.method.toLowerCase();
    // {id} and {id:str} are two routes to the gateway but one path to OpenAPI.
    if (ops[method])
      throw new Error(
        `openapi: ${r.method} ${r.path} and another route share the path ${p}; give one of their parameters another name`,
      );
    ops[method] = operation(iface, r, problems, skip);
  }
  const self = `${iface.prefix}/openapi.json`;
  paths[self] = {
    get: {
      operationId: `${iface.id.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase())}OpenApi`,
      description: 'This document: served by the gateway without a key, spending nothing.',
      security: [],
      responses: {
        '200': { description: 'This document.', content: { 'application/json': { schema: { type: 'object' } } } },
      },
      'x-keygate-answered-by': 'gateway',
      'x-keygate-spends': false,
    },
  };
  const address =
    iface.addressLimit === null
      ? 'No address layer.'
      : `Every client address has ${iface.addressLimit} requests per minute across keys (an IPv6 client per /64).`;
  return {
    openapi: '3.1.0',
    info: {
      title: `${profile.name} API`,
      version: iface.id,
      description:
        `Generated by keygate from the profile ${profile.name} (docs/profiles.md). A request that reaches the ` +
        `rate limiter spends one request of its key's bucket (x-keygate-bucket) per minute; ${address} ` +
        `The plans (a consumer without one has \`free\`'s budgets):\n\n${planLines(profile)}\n\n` +
        'Refusals are RFC 9457 problem details (application/problem+json). The bodies of the services are ' +
        'theirs and not described here.',
    },
    security: [{ [SCHEME]: [] }],
    paths,
    components: {
      securitySchemes: { [SCHEME]: securityScheme(iface) },
      headers: headerComponents(iface),
      schemas: { Problem: PROBLEM, RateLimitStatus: rateLimitStatus(profile, iface) },
      responses: problems.components,
    },
  };
}

/**
 * The documents of a profile's problem-details interfaces, by the path the gateway serves each at
 * (`<prefix>/openapi.json`), as bytes. The workspace API's interfaces have none here: their documents
 * are the checked-in files of config/openapi/.
 */
export function openApiDocuments(profile: Profile): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const iface of profile.interfaces) {
    if (iface.errors.format !== 'problem') continue;
    out.set(`${iface.prefix}/openapi.json`, Buffer.from(serialize(generateProfileOpenApi(profile, iface))));
  }
  return out;
}
