// keygate as another proxy's authorizer, checked without a cluster or the proxies: the examples of
// deploy/forward-auth/ (nginx, Traefik, Envoy, Istio) and the Kustomize overlay deploy/overlays/decision
// (the decision service beside an ingress-nginx Ingress). Each file parses; the overlay renders with
// `kubectl kustomize` into objects valid against the schemas test/deploy/manifests.test.ts uses; every
// keygate field and endpoint a file names is one the protocol (docs/forward-auth.md) names and, for the
// fields copied from keygate's answer, one a running decision service sends; their ports agree with
// the settings' defaults and with one another; envoy.yaml (and its commented gRPC variant) is read against
// Envoy's own API protos. The nginx file runs for real in nginx-forward-auth.test.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { loadSettings, settingsSchema } from '../../src/config/settings.js';
import { K } from '../fixtures/seed.js';
import {
  KINDS,
  STAND_INS,
  deployment,
  dnsLabel,
  environmentOf,
  issues,
  metadata,
  modeOf,
  portNumber,
  service,
  configMap,
} from '../helpers/k8s-manifests.js';
import { startStack, type Stack } from '../helpers/stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'deploy', 'forward-auth');
const DEFAULTS = settingsSchema.parse({});
const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';
const NGINX = process.env.NGINX ?? '/usr/sbin/nginx';
const read = (file: string) => readFileSync(join(DIR, file), 'utf8');
/** Every document of a YAML file, as plain values; a parse error or warning fails the file. */
function yamlDocs(text: string, file: string): any[] {
  return parseAllDocuments(text).map((d, i) => {
    const problems = [...d.errors, ...d.warnings].map((e) => e.message);
    if (problems.length > 0) throw new Error(`${file} #${i}: ${problems.join('; ')}`);
    return d.toJS();
  });
}

/** The Kubernetes Ingress, as the overlay uses it (networking.k8s.io/v1). */
const ingress = z.strictObject({
  apiVersion: z.literal('networking.k8s.io/v1'),
  kind: z.literal('Ingress'),
  metadata,
  spec: z.strictObject({
    ingressClassName: dnsLabel.optional(),
    rules: z
      .array(
        z.strictObject({
          host: z.string().optional(),
          http: z.strictObject({
            paths: z
              .array(
                z.strictObject({
                  path: z.string().startsWith('/'),
                  pathType: z.enum(['Prefix', 'Exact', 'ImplementationSpecific']),
                  backend: z.strictObject({
                    service: z.strictObject({ name: dnsLabel, port: z.strictObject({ number: portNumber }) }),
                  }),
                }),
              )
              .min(1),
          }),
        }),
      )
      .min(1),
  }),
});
const RENDERED_KINDS = { ...KINDS, 'networking.k8s.io/v1 Ingress': ingress };

/** The protocol's page: every keygate field and endpoint an example names must be in it. */
const PROTOCOL = join(ROOT, 'docs', 'forward-auth.md');

/** Field names in an nginx text that keygate's answer is read for (`$upstream_http_x_gateway_identity`). */
const upstreamHttpFields = (text: string) =>
  [...text.matchAll(/\$upstream_http_([a-z0-9_]+)/g)].map((m) => m[1].replace(/_/g, '-'));
/** The fields an nginx auth location describes the request to keygate with (proxy_set_header X-Original-URI ...). */
const describingFields = (text: string) =>
  [...text.matchAll(/proxy_set_header\s+(X-(?:Keygate|Original|Forwarded)-[A-Za-z-]+)/g)].map((m) =>
    m[1].toLowerCase(),
  );

// ---- Envoy's configuration against Envoy's own API (the protos @grpc/grpc-js-xds ships) -------------

const ENVOY_API = join(ROOT, 'node_modules', '@grpc', 'grpc-js-xds', 'deps');
/** What envoy.yaml uses: the bootstrap, and every extension it names by @type. */
const ENVOY_FILES = [
  'envoy/config/bootstrap/v3/bootstrap.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
];
/** Well-known types whose JSON form is a scalar ("1s", 5, true). */
const SCALAR_MESSAGES = new Set(
  ['Duration', 'Timestamp', 'BoolValue', 'StringValue', 'BytesValue', 'DoubleValue', 'FloatValue']
    .concat(['Int32Value', 'Int64Value', 'UInt32Value', 'UInt64Value'])
    .map((n) => `google.protobuf.${n}`),
);

interface FieldDescriptor {
  name: string;
  jsonName?: string;
  type: string;
  typeName: string;
  label: string;
}
interface MessageDescriptor {
  name: string;
  field: FieldDescriptor[];
  nestedType?: MessageDescriptor[];
  enumType?: EnumDescriptor[];
  options?: { mapEntry?: boolean } | null;
}
interface EnumDescriptor {
  name: string;
  value: { name: string }[];
}
type Described = { kind: 'message'; type: MessageDescriptor } | { kind: 'enum'; type: EnumDescriptor };

/** Every message and enum of the loaded files by full name, nested ones included (proto-loader lists top-level ones). */
function envoyTypes(def: PackageDefinition): Map<string, Described> {
  const types = new Map<string, Described>();
  const add = (name: string, t: MessageDescriptor) => {
    types.set(name, { kind: 'message', type: t });
    for (const n of t.nestedType ?? []) add(`${name}.${n.name}`, n);
    for (const e of t.enumType ?? []) types.set(`${name}.${e.name}`, { kind: 'enum', type: e });
  };
  for (const [name, v] of Object.entries(def)) {
    const d = v as unknown as { format?: string; type: MessageDescriptor & EnumDescriptor };
    if (d.format?.endsWith('EnumDescriptorProto')) types.set(name, { kind: 'enum', type: d.type });
    else if (d.format?.endsWith('DescriptorProto')) add(name, d.type);
  }
  return types;
}

/** A type name as protobuf resolves it from `scope` (a message's full name): innermost scope first. */
function resolveType(types: Map<string, Described>, scope: string, name: string): string | undefined {
  if (name.startsWith('.')) return types.has(name.slice(1)) ? name.slice(1) : undefined;
  const parts = scope.split('.');
  for (let i = parts.length; i >= 0; i--) {
    const full = [...parts.slice(0, i), name].join('.');
    if (types.has(full)) return full;
  }
  return undefined;
}

/**
 * Where `value` (a YAML/JSON value) is not a `typeName` of Envoy's API: unknown fields, an unknown
 * `@type`, an enum value Envoy does not have, a scalar of the wrong kind. Field names in the .proto's
 * own spelling or the JSON one, as Envoy reads them.
 */
function envoyIssues(types: Map<string, Described>, typeName: string, value: unknown, path: string): string[] {
  if (SCALAR_MESSAGES.has(typeName))
    return typeof value === 'object' && value !== null ? [`${path}: ${typeName} is a scalar`] : [];
  if (typeName === 'google.protobuf.Struct' || typeName === 'google.protobuf.Value') return [];
  if (typeName === 'google.protobuf.Any') {
    const { '@type': url, ...rest } = value as Record<string, unknown>;
    const name = String(url).replace(/^type\.googleapis\.com\//, '');
    return types.has(name) ? envoyIssues(types, name, rest, path) : [`${path}: unknown @type ${String(url)}`];
  }
  const d = types.get(typeName)!;
  if (d.kind === 'enum')
    return d.type.value.some((v) => v.name === value) ? [] : [`${path}: ${String(value)} is not a ${typeName}`];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: ${typeName} is a message`];
  const out: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    const f = d.type.field.find((x) => x.name === k || x.jsonName === k);
    if (!f) {
      out.push(`${path}.${k}: no such field of ${typeName}`);
      continue;
    }
    const ref = f.typeName ? resolveType(types, typeName, f.typeName) : undefined;
    if (f.typeName && !ref) {
      out.push(`${path}.${k}: type ${f.typeName} not loaded`);
      continue;
    }
    const check = (item: unknown, at: string) => {
      if (ref) return out.push(...envoyIssues(types, ref, item, at));
      const kind =
        f.type === 'TYPE_STRING' || f.type === 'TYPE_BYTES' ? 'string' : f.type === 'TYPE_BOOL' ? 'boolean' : 'number';
      if (typeof item !== kind && !(kind === 'number' && /^-?\d+$/.test(String(item))))
        out.push(`${at}: ${f.type} expected, got ${JSON.stringify(item)}`);
    };
    const entry = ref ? types.get(ref) : undefined;
    if (entry?.kind === 'message' && entry.type.options?.mapEntry) {
      const vf = entry.type.field.find((x) => x.name === 'value')!;
      const vref = vf.typeName ? resolveType(types, ref!, vf.typeName) : undefined;
      for (const [mk, mv] of Object.entries(v as object))
        if (vref) out.push(...envoyIssues(types, vref, mv, `${path}.${k}.${mk}`));
    } else if (f.label === 'LABEL_REPEATED') {
      if (!Array.isArray(v)) out.push(`${path}.${k}: a list`);
      else v.forEach((item, i) => check(item, `${path}.${k}[${i}]`));
    } else check(v, `${path}.${k}`);
  }
  return out;
}

describe('deploy/forward-auth and deploy/overlays/decision', () => {
  const nginx = read('nginx.conf');
  const traefik = yamlDocs(read('traefik.yaml'), 'traefik.yaml');
  const envoy = yamlDocs(read('envoy.yaml'), 'envoy.yaml')[0];
  const istio = yamlDocs(read('istio.yaml'), 'istio.yaml');
  const forwardAuth = traefik.find((d) => d.kind === 'Middleware' && d.spec.forwardAuth).spec.forwardAuth;
  const extAuthz = envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters.find(
    (f: { name: string }) => f.name === 'envoy.filters.http.ext_authz',
  ).typed_config.http_service;
  const provider = istio.find((d) => d.kind === 'IstioOperator').spec.meshConfig.extensionProviders[0];
  const envoyRoutes = () =>
    envoy.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes;
  const cluster = (name: string) =>
    envoy.static_resources.clusters.find((c: { name: string }) => c.name === name).load_assignment.endpoints[0]
      .lb_endpoints[0].endpoint.address.socket_address;

  const render = () => {
    const text = execFileSync(KUBECTL, ['kustomize', join(ROOT, 'deploy', 'overlays', 'decision')], {
      encoding: 'utf8',
    });
    return parseAllDocuments(text).map((d) => d.toJS() as { apiVersion: string; kind: string; metadata: any });
  };
  let rendered: ReturnType<typeof render> = [];
  const find = (kind: string, name?: string) =>
    rendered.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name)) as any;

  beforeAll(() => {
    expect(existsSync(KUBECTL), `${KUBECTL} (.ci/run installs kubectl when absent)`).toBe(true);
    rendered = render();
  });

  it('the overlay renders into valid objects: the base without its app container and public Service, a decision Service, an Ingress', () => {
    for (const o of rendered) {
      const schema = RENDERED_KINDS[`${o.apiVersion} ${o.kind}` as keyof typeof RENDERED_KINDS];
      expect(schema, `${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(issues(schema, o), `${o.kind} ${o.metadata.name}`).toEqual([]);
    }
    const names = rendered.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(names).toContain('Service/keygate-decision');
    expect(names).toContain('Ingress/my-service');
    expect(names).not.toContain('Service/keygate');
  });

  it("runs keygate alone, deciding on DECISION_PORT, its settings loading as the gateway's", () => {
    const d = deployment.parse(find('Deployment'));
    const containers = d.spec.template.spec.containers;
    expect(containers.map((c) => modeOf(c))).toEqual(['gateway']);
    const configMaps = rendered.filter((o) => o.kind === 'ConfigMap').map((o) => configMap.parse(o));
    const { literal, fromSecret } = environmentOf(containers[0], configMaps);
    const env = { ...literal, ...Object.fromEntries(Object.keys(fromSecret).map((n) => [n, STAND_INS[n] ?? 'x'])) };
    const s = loadSettings(env, 'gateway');
    expect(s.DECISION_PORT).toBe(8082);
    expect(s.DECISION_HOST, 'reachable from the ingress controller').toBe('0.0.0.0');
    expect(s.TRUST_PROXY.length, 'the ingress controller is trusted for X-Forwarded-For').toBeGreaterThan(0);
    expect(containers[0].ports?.find((p) => p.name === 'decision')?.containerPort).toBe(s.DECISION_PORT);
    // The decision Service reaches that port of these pods, and no Service reaches keygate's own proxy.
    const svc = service.parse(find('Service', 'keygate-decision'));
    const labels = d.spec.template.metadata.labels;
    expect(Object.entries(svc.spec.selector).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(svc.spec.ports.map((p) => [p.port, p.targetPort])).toEqual([[s.DECISION_PORT, 'decision']]);
    for (const o of rendered.filter((x) => x.kind === 'Service'))
      for (const p of service.parse(o).spec.ports) expect([p.targetPort, p.port]).not.toContain('http');
  });

  it("the Ingress asks the decision Service's /auth and /answer, and routes to the service on BACKEND_PORT", () => {
    const ing = ingress.parse(find('Ingress'));
    const a = ing.metadata.annotations!;
    const svcHost = `keygate-decision.${find('Service', 'keygate-decision').metadata.namespace ?? 'default'}.svc.cluster.local`;
    const authUrl = new URL(a['nginx.ingress.kubernetes.io/auth-url']);
    expect([authUrl.hostname, Number(authUrl.port), authUrl.pathname]).toEqual([svcHost, 8082, '/auth']);
    const answerUrl = new URL(
      /set \$keygate_answer_url (\S+);/.exec(a['nginx.ingress.kubernetes.io/server-snippet'])![1],
    );
    expect([answerUrl.hostname, Number(answerUrl.port), answerUrl.pathname]).toEqual([svcHost, 8082, '/answer']);
    expect(a['nginx.ingress.kubernetes.io/configuration-snippet']).toContain('error_page 401 403 = @keygate_answer;');
    expect(a['nginx.ingress.kubernetes.io/server-snippet']).toContain('location @keygate_answer');
    for (const r of ing.spec.rules)
      for (const p of r.http.paths) expect(p.backend.service.port.number).toBe(DEFAULTS.BACKEND_PORT);
  });

  // The snippets inside the template ingress-nginx writes them into (its auth location's fixed lines, its
  // auth-response-headers lines), checked by nginx itself (nginx -t): no cluster needed.
  it.skipIf(!existsSync(NGINX))("the Ingress's snippets are nginx configuration nginx accepts (nginx -t)", () => {
    const a = ingress.parse(find('Ingress')).metadata.annotations!;
    const copied = a['nginx.ingress.kubernetes.io/auth-response-headers'].split(',');
    const dir = mkdtempSync(join(tmpdir(), 'kg-ingress-'));
    const conf = `events {}
http {
  map $request_id $req_id { default $request_id; }
  server {
    listen 127.0.0.1:8080;
    ${a['nginx.ingress.kubernetes.io/server-snippet']}
    location = /_external-auth {
      internal;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
      proxy_set_header X-Original-Method $request_method;
      ${a['nginx.ingress.kubernetes.io/auth-snippet']}
      set $target ${a['nginx.ingress.kubernetes.io/auth-url']};
      proxy_pass $target;
    }
    location / {
      auth_request /_external-auth;
      ${copied.map((h, i) => `auth_request_set $authHeader${i} $upstream_http_${h.toLowerCase().replace(/-/g, '_')};\n      proxy_set_header '${h}' $authHeader${i};`).join('\n      ')}
      ${a['nginx.ingress.kubernetes.io/configuration-snippet']}
      proxy_pass http://127.0.0.1:8081;
    }
  }
}
`;
    writeFileSync(join(dir, 'nginx.conf'), conf);
    try {
      const r = spawnSync(NGINX, ['-t', '-q', '-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], {
        encoding: 'utf8',
      });
      expect(r.stderr, conf).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every example points at DECISION_PORT 8082 (gRPC: 8083) and forwards to the service on BACKEND_PORT', () => {
    const decision = 8082;
    expect([...nginx.matchAll(/server 10\.0\.0\.\d+:(\d+);/g)].map((m) => Number(m[1]))).toEqual([decision, decision]);
    expect(/upstream keygate_app \{\s*server [\d.]+:(\d+);/.exec(nginx)?.[1]).toBe(String(DEFAULTS.BACKEND_PORT));
    const fa = new URL(forwardAuth.address);
    expect([Number(fa.port), fa.pathname]).toEqual([decision, '/auth']);
    const routes = traefik.find((d) => d.kind === 'IngressRoute').spec.routes;
    const route = routes.find((r: any) => r.services[0].name === 'my-service');
    expect(route.services[0].port).toBe(DEFAULTS.BACKEND_PORT);
    // keygate's own 2xx answers are asked of /envoy/<target> on the decision port, without ForwardAuth.
    const own = routes.find((r: any) => r.services[0].name === 'keygate-decision');
    expect(own.services[0].port).toBe(decision);
    expect(own.middlewares.map((m: { name: string }) => m.name)).toEqual(['keygate-strip', 'keygate-own-answers']);
    expect(traefik.find((d) => d.metadata.name === 'keygate-own-answers').spec.replacePathRegex.replacement).toMatch(
      /^\/envoy\//,
    );
    // The credentials are removed only after keygate has read them.
    expect(route.middlewares.map((m: { name: string }) => m.name)).toEqual([
      'keygate-strip',
      'keygate-auth',
      'keygate-credentials',
    ]);
    expect([cluster('keygate_decision').port_value, extAuthz.path_prefix]).toEqual([decision, '/envoy']);
    expect(new URL(extAuthz.server_uri.uri).port).toBe(String(decision));
    expect(cluster('my_service').port_value).toBe(DEFAULTS.BACKEND_PORT);
    const [ownAnswers, service] = envoyRoutes();
    expect([ownAnswers.route.cluster, ownAnswers.route.regex_rewrite.substitution]).toEqual([
      'keygate_decision',
      '/envoy/\\1',
    ]);
    expect(ownAnswers.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled).toBe(true);
    expect(service.route.cluster).toBe('my_service');
    expect(service.request_headers_to_remove).toEqual(['authorization', 'x-api-key']);
    const vs = istio.find((d) => d.kind === 'VirtualService').spec.http;
    expect(vs[0].route[0].destination.port.number).toBe(decision);
    expect(vs[0].rewrite.uriRegexRewrite.rewrite).toBe('/envoy/\\1');
    expect(vs[1].route[0].destination.port.number).toBe(DEFAULTS.BACKEND_PORT);
    expect([provider.envoyExtAuthzHttp.port, provider.envoyExtAuthzHttp.pathPrefix]).toEqual([decision, '/envoy']);
    // The gRPC variants, commented out, point at DECISION_GRPC_PORT's 8083.
    expect([...read('envoy.yaml').matchAll(/#.*port_value: (\d+)/g)].map((m) => m[1])).toEqual(['8083']);
    expect(/#\s+port: (\d+)/.exec(read('istio.yaml'))?.[1]).toBe('8083');
    // nginx lets a body through to keygate's own size check (BODY_LIMIT_BYTES) rather than answer 413 itself.
    const max = /client_max_body_size (\d+)m;/.exec(nginx);
    expect(Number(max![1]) * 2 ** 20).toBeGreaterThan(DEFAULTS.BODY_LIMIT_BYTES);
  });

  it("envoy.yaml is a bootstrap of Envoy's API, its gRPC variant too (every field, @type and enum value known)", () => {
    const def = envoyTypes(
      loadSync(ENVOY_FILES, {
        keepCase: true,
        includeDirs: ['envoy-api', 'googleapis', 'protoc-gen-validate', 'xds'].map((d) => join(ENVOY_API, d)),
      }),
    );
    expect(envoyIssues(def, 'envoy.config.bootstrap.v3.Bootstrap', envoy, 'envoy.yaml')).toEqual([]);
    // The commented gRPC variant, uncommented in place of the HTTP filter and beside the clusters.
    const text = read('envoy.yaml');
    const uncomment = (from: RegExp) => {
      const lines = text.split('\n');
      const start = lines.findIndex((l) => from.test(l));
      const block: string[] = [];
      for (const l of lines.slice(start)) {
        const m = /^(\s*)# ?(.*)$/.exec(l);
        if (!m || m[2].trim() === '') break;
        block.push(m[1] + m[2]);
      }
      const indent = Math.min(...block.map((l) => /^\s*/.exec(l)![0].length));
      return parseAllDocuments(block.map((l) => l.slice(indent)).join('\n'))[0].toJS();
    };
    const grpcFilter = uncomment(/# - name: envoy\.filters\.http\.ext_authz/)[0];
    const grpcCluster = uncomment(/# - name: keygate_decision_grpc/)[0];
    const variant = structuredClone(envoy);
    const hcm = variant.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
    hcm.http_filters[0] = grpcFilter;
    variant.static_resources.clusters.push(grpcCluster);
    expect(grpcFilter.typed_config.grpc_service.envoy_grpc.cluster_name).toBe(grpcCluster.name);
    expect(envoyIssues(def, 'envoy.config.bootstrap.v3.Bootstrap', variant, 'gRPC variant')).toEqual([]);
  });

  it('names only fields and endpoints of the protocol (docs/forward-auth.md)', () => {
    const protocol = readFileSync(PROTOCOL, 'utf8').toLowerCase();
    const ing = find('Ingress').metadata.annotations as Record<string, string>;
    const ingressNginx = Object.values(ing).join('\n');
    const named = new Set([
      ...upstreamHttpFields(nginx),
      ...upstreamHttpFields(ingressNginx),
      ...describingFields(/location = \/_keygate\/auth \{[^}]*\}/.exec(nginx)![0]),
      ...describingFields(ing['nginx.ingress.kubernetes.io/auth-snippet']),
      ...forwardAuth.authResponseHeaders.map((h: string) => h.toLowerCase()),
      ...Object.keys(traefik.find((d) => d.metadata.name === 'keygate-strip').spec.headers.customRequestHeaders).map(
        (h) => h.toLowerCase(),
      ),
      ...extAuthz.authorization_response.allowed_upstream_headers.patterns.map((p: { exact: string }) => p.exact),
      ...provider.envoyExtAuthzHttp.headersToUpstreamOnAllow,
    ]);
    // The client's own fields (the key, the address) and the rate-limit family are the gateway's
    // contract (docs/decisions.md); the protocol's own fields are these.
    const own = [...named].filter((n) => /^x-(gateway|keygate|original|forwarded-(method|uri|content-length))/.test(n));
    expect(own.length).toBeGreaterThan(8);
    for (const n of own) expect(protocol, n).toContain(n);
    for (const endpoint of ['/auth', '/answer', '/envoy']) expect(protocol).toContain(endpoint);
  });

  describe('against a running decision service', () => {
    let stack: Stack;
    beforeAll(async () => {
      const jwk = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'fa' };
      stack = await startStack({
        memory: true,
        env: {
          DECISION_PORT: '0',
          DECISION_HOST: '127.0.0.1',
          IDENTITY_FORMAT: 'both',
          CORS_ORIGINS: 'https://app.example.test',
          IDENTITY_JWT_KEYS: JSON.stringify([jwk]),
        },
      });
    });
    afterAll(() => stack?.close());

    it("every field the examples copy from keygate's allowed answer is one keygate's /auth sends", async () => {
      const r = await fetch(`${stack.app.decisionUrl}/auth`, {
        headers: {
          'x-original-method': 'GET',
          'x-original-uri': '/v2/workspaces/100/tags',
          authorization: `Bearer ${K.wsAdmin}`,
          'x-keygate-proxy': 'nginx',
          origin: 'https://app.example.test',
        },
      });
      expect(r.status).toBe(200);
      const sent = new Set([...r.headers.keys()]);
      const ing = Object.values(find('Ingress').metadata.annotations as Record<string, string>).join('\n');
      const copied = [
        ...upstreamHttpFields(nginx),
        ...upstreamHttpFields(ing),
        ...forwardAuth.authResponseHeaders.map((h: string) => h.toLowerCase()),
        ...extAuthz.authorization_response.allowed_upstream_headers.patterns.map((p: { exact: string }) => p.exact),
        ...provider.envoyExtAuthzHttp.headersToUpstreamOnAllow,
      ];
      // Sent only in their cases: the token of an answer; Authorization when IDENTITY_JWT_HEADER says so.
      const conditional = new Set(['x-keygate-answer', 'authorization']);
      for (const f of new Set(copied)) if (!conditional.has(f)) expect([...sent], f).toContain(f);
      // The nginx file reads the answer's token from a refusal.
      const refused = await fetch(`${stack.app.decisionUrl}/auth`, {
        headers: { 'x-original-uri': '/v2/workspaces/100/tags', 'x-keygate-proxy': 'nginx' },
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('x-keygate-answer')).toBeTruthy();
    });
  });
});
