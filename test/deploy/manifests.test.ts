// The container image and the Kubernetes sidecar deployment, checked without a cluster or a Docker
// engine: every YAML document under deploy/ against zod schemas of the kinds used, the cross-references
// between them (Secrets, ConfigMaps, ports, probes, the shutdown timeline) and against the settings
// of src/config/settings.ts; the Dockerfile textually against the repository; deploy/healthcheck.mjs
// by running it against local listeners.
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile, execFileSync } from 'node:child_process';
import http from 'node:http';
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { z } from 'zod';
import { loadSettings, settingsSchema } from '../../src/config/settings.js';
import { listenLocal } from '../helpers/listen.js';
import {
  KINDS,
  STAND_INS,
  deployment,
  environmentOf,
  hpa,
  issues,
  modeOf,
  pdb,
  type Container,
  type Deployment,
  type Probe,
} from '../helpers/k8s-manifests.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEPLOY = join(ROOT, 'deploy');
const KNOWN_SETTINGS = new Set(Object.keys(settingsSchema.shape));
const DEFAULTS = settingsSchema.parse({});

// ---- loading --------------------------------------------------------------------------------------

interface Doc {
  file: string;
  index: number;
  value: unknown;
  errors: string[];
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => {
      const p = join(dir, f);
      // deploy/prometheus/ holds Prometheus rule files, not Kubernetes objects (test/deploy/ops-kit.test.ts);
      // deploy/overlays/ holds patches, checked rendered (below); deploy/forward-auth/ other proxies'
      // configurations (test/deploy/forward-auth-manifests.test.ts); kustomization.yaml is Kustomize's own.
      if (statSync(p).isDirectory())
        return [join(DEPLOY, 'prometheus'), join(DEPLOY, 'overlays'), join(DEPLOY, 'forward-auth')].includes(p)
          ? []
          : yamlFiles(p);
      return /\.ya?ml$/.test(f) && f !== 'kustomization.yaml' ? [p] : [];
    });
}

function loadDocs(): Doc[] {
  return yamlFiles(DEPLOY).flatMap((path) => {
    const file = relative(ROOT, path);
    return parseAllDocuments(readFileSync(path, 'utf8'))
      .map((d, index) => ({ file, index, value: d.toJS(), errors: [...d.errors, ...d.warnings].map((e) => e.message) }))
      .filter((d) => d.value !== null || d.errors.length > 0);
  });
}

const docs = loadDocs();
const objects = docs.map((d) => d.value as { apiVersion?: string; kind?: string; metadata?: { name?: string } });
const ofKind = <K extends keyof typeof KINDS>(key: K) =>
  objects
    .filter((o) => `${o.apiVersion} ${o.kind}` === key)
    .map((o) => KINDS[key].parse(o) as z.infer<(typeof KINDS)[K]>);

/** The environment a container gets, from deploy/'s ConfigMaps. */
const environment = (c: Container) => environmentOf(c, ofKind('v1 ConfigMap'));

function numericSetting(c: Container, name: 'PORT' | 'ADMIN_PORT' | 'BACKEND_PORT' | 'DRAIN_TIMEOUT_MS'): number {
  const v = environment(c).literal[name];
  return v === undefined ? DEFAULTS[name] : Number(v);
}

function resolvePort(c: Container, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/** Seconds a preStop hook holds the container before SIGTERM: `sleep N` (exec) or the sleep action. */
function preStopSeconds(c: Container): number {
  const h = c.lifecycle?.preStop;
  if (!h) return 0;
  if (h.sleep) return h.sleep.seconds;
  const cmd = h.exec?.command ?? [];
  const i = cmd.findIndex((a) => /(^|\/)sleep$/.test(a));
  return i >= 0 && /^\d+$/.test(cmd[i + 1] ?? '') ? Number(cmd[i + 1]) : 0;
}

const deployments = () => ofKind('apps/v1 Deployment');
const keygatePods = () =>
  deployments().filter((d) => d.spec.template.spec.containers.some((c) => modeOf(c) === 'gateway'));
const gatewayOf = (d: Deployment) => d.spec.template.spec.containers.find((c) => modeOf(c) === 'gateway')!;
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

// ---- manifests ------------------------------------------------------------------------------------

describe('deploy/ manifests', () => {
  it('holds YAML documents, every one parsing cleanly', () => {
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) expect(d.errors, `${d.file} #${d.index}`).toEqual([]);
  });

  it('uses only known apiVersion/kind pairs, each document valid against its schema', () => {
    for (const [i, o] of objects.entries()) {
      const where = `${docs[i].file} #${docs[i].index} (${o?.kind} ${o?.metadata?.name})`;
      const schema = KINDS[`${o?.apiVersion} ${o?.kind}` as keyof typeof KINDS];
      expect(schema, `${where}: unsupported apiVersion/kind ${o?.apiVersion} ${o?.kind}`).toBeDefined();
      expect(issues(schema, o), where).toEqual([]);
    }
  });

  it('names each object once per kind', () => {
    const seen = objects.map((o) => `${o.kind}/${o.metadata?.name}`);
    expect(seen.filter((s, i) => seen.indexOf(s) !== i)).toEqual([]);
  });

  it('has a sidecar Deployment of several replicas: the gateway beside the service it protects', () => {
    const pods = keygatePods();
    expect(pods.length).toBe(1);
    const d = pods[0];
    expect(d.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(d.spec.template.spec.containers.length).toBeGreaterThanOrEqual(2);
    expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
  });

  it('gives every container of a pod its own name and every container port one owner (one network namespace)', () => {
    for (const d of deployments()) {
      const cs = d.spec.template.spec.containers;
      const names = cs.map((c) => c.name);
      expect(new Set(names).size, d.metadata.name).toBe(names.length);
      const ports = cs.flatMap((c) => (c.ports ?? []).map((p) => p.containerPort));
      expect(new Set(ports).size, d.metadata.name).toBe(ports.length);
      const portNames = cs.flatMap((c) => (c.ports ?? []).map((p) => p.name).filter(Boolean));
      expect(new Set(portNames).size, d.metadata.name).toBe(portNames.length);
    }
  });

  it('mounts only declared volumes', () => {
    for (const d of deployments()) {
      const volumes = new Set((d.spec.template.spec.volumes ?? []).map((v) => v.name));
      for (const c of d.spec.template.spec.containers)
        for (const m of c.volumeMounts ?? [])
          expect(volumes.has(m.name), `${d.metadata.name}/${c.name} mounts ${m.name}`).toBe(true);
    }
  });

  it('sets only known settings in keygate containers, and those settings load', () => {
    for (const d of deployments()) {
      for (const c of d.spec.template.spec.containers) {
        const mode = modeOf(c);
        if (!mode) continue;
        const { literal, fromSecret } = environment(c);
        const names = [...Object.keys(literal), ...Object.keys(fromSecret)];
        expect(
          names.filter((n) => !KNOWN_SETTINGS.has(n)),
          `${d.metadata.name}/${c.name}: not settings of settingsSchema`,
        ).toEqual([]);
        const env = {
          ...literal,
          ...Object.fromEntries(Object.keys(fromSecret).map((n) => [n, STAND_INS[n] ?? 'stand-in'])),
        };
        expect(() => loadSettings(env, mode as 'gateway' | 'backend'), `${d.metadata.name}/${c.name}`).not.toThrow();
      }
    }
  });

  it('takes every secretKeyRef from a Secret defined in deploy/ that has the key, and every ConfigMap from deploy/', () => {
    const secrets = ofKind('v1 Secret');
    const configMaps = ofKind('v1 ConfigMap');
    let refs = 0;
    for (const d of deployments()) {
      for (const c of d.spec.template.spec.containers) {
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (ref) {
            refs++;
            const s = secrets.find((x) => x.metadata.name === ref.name);
            expect(s, `${c.name}: ${e.name} from Secret ${ref.name}`).toBeDefined();
            expect(Object.keys({ ...s!.stringData, ...s!.data }), `${c.name}: ${e.name}`).toContain(ref.key);
          }
          const cmRef = e.valueFrom?.configMapKeyRef;
          if (cmRef)
            expect(configMaps.find((m) => m.metadata.name === cmRef.name)?.data, `${c.name}: ${e.name}`).toHaveProperty(
              cmRef.key,
            );
        }
        for (const ef of c.envFrom ?? []) {
          if (ef.configMapRef)
            expect(
              configMaps.map((m) => m.metadata.name),
              c.name,
            ).toContain(ef.configMapRef.name);
          if (ef.secretRef)
            expect(
              secrets.map((s) => s.metadata.name),
              c.name,
            ).toContain(ef.secretRef.name);
        }
      }
    }
    expect(refs).toBeGreaterThan(0);
  });

  it('reads GATEWAY_SECRET, INTERNAL_TOKEN, CREDENTIAL_KEYS, DATABASE_URL and REDIS_URL from the Secret, never as literals', () => {
    const d = keygatePods()[0];
    const secretsOf = (c: Container) => environment(c).fromSecret;
    for (const c of d.spec.template.spec.containers) {
      const { literal } = environment(c);
      for (const n of [
        'GATEWAY_SECRET',
        'INTERNAL_TOKEN',
        'CREDENTIAL_KEYS',
        'DATABASE_URL',
        'REDIS_URL',
        'REDIS_CLUSTER_NODES',
      ])
        expect(literal, `${c.name}: ${n}`).not.toHaveProperty(n);
    }
    const gateway = gatewayOf(d);
    expect(Object.keys(secretsOf(gateway)).sort()).toEqual(['DATABASE_URL', 'GATEWAY_SECRET', 'REDIS_URL']);
    const backend = d.spec.template.spec.containers.find((c) => modeOf(c) === 'backend');
    if (backend) {
      expect(Object.keys(secretsOf(backend)).sort()).toEqual([
        'CREDENTIAL_KEYS',
        'DATABASE_URL',
        'GATEWAY_SECRET',
        'INTERNAL_TOKEN',
        'REDIS_URL',
      ]);
      // One HMAC key on both sides, one database, one Redis.
      for (const n of ['GATEWAY_SECRET', 'DATABASE_URL', 'REDIS_URL'])
        expect(secretsOf(backend)[n], n).toEqual(secretsOf(gateway)[n]);
    }
  });

  it('keeps the example Secrets unusable placeholders (stringData, CHANGE-ME, refused by settingsSchema)', () => {
    const secrets = ofKind('v1 Secret');
    expect(secrets.length).toBeGreaterThan(0);
    for (const s of secrets) {
      expect(s.data, `${s.metadata.name}: use stringData placeholders, not encoded data`).toBeUndefined();
      const values = s.stringData ?? {};
      for (const [k, v] of Object.entries(values)) {
        if (/SECRET|TOKEN|PASSWORD/.test(k)) expect(v, `${s.metadata.name}.${k}`).toBe('CHANGE-ME');
        if (/^(postgres|redis)s?:\/\/[^@/]*:[^@/]*@/.test(v))
          expect(v, `${s.metadata.name}.${k}: password placeholder`).toMatch(/:CHANGE-ME@/);
      }
      for (const k of ['GATEWAY_SECRET', 'INTERNAL_TOKEN', 'CREDENTIAL_KEYS']) {
        if (values[k] !== undefined)
          expect(settingsSchema.safeParse({ [k]: values[k] }).success, `${k} placeholder must not start keygate`).toBe(
            false,
          );
      }
    }
  });

  it('probes the gateway on ADMIN_PORT: liveness /healthz, readiness /readyz (startup /healthz)', () => {
    const g = gatewayOf(keygatePods()[0]);
    const admin = numericSetting(g, 'ADMIN_PORT');
    expect(admin).toBe(9090);
    const httpProbe = (p: Probe | undefined, what: string) => {
      expect(p?.httpGet, `${what} is an httpGet probe`).toBeDefined();
      expect(resolvePort(g, p!.httpGet!.port), `${what} port`).toBe(admin);
      return p!.httpGet!.path;
    };
    expect(httpProbe(g.livenessProbe, 'livenessProbe')).toBe('/healthz');
    expect(httpProbe(g.readinessProbe, 'readinessProbe')).toBe('/readyz');
    if (g.startupProbe) expect(httpProbe(g.startupProbe, 'startupProbe')).toBe('/healthz');
  });

  it('opens the operations port and the admin API to the pod network: the kubelet, Prometheus and the admin Service reach them', () => {
    // Both bind loopback unless told (src/config/settings.ts); the kubelet's probes come from outside the pod.
    const env = environment(gatewayOf(keygatePods()[0])).literal;
    const open = (v: string | undefined) => v === '0.0.0.0' || v === '::';
    expect(DEFAULTS.ADMIN_HOST).toBe('127.0.0.1');
    expect(open(env.ADMIN_HOST), 'ADMIN_HOST').toBe(true);
    expect(open(env.ADMIN_API_HOST), 'ADMIN_API_HOST').toBe(true);
  });

  it('declares the gateway ports as its settings say, and points UPSTREAM_URL at the sidecar on the loopback', () => {
    const d = keygatePods()[0];
    const g = gatewayOf(d);
    const port = (name: string) => g.ports?.find((p) => p.name === name)?.containerPort;
    expect(port('http')).toBe(numericSetting(g, 'PORT'));
    expect(port('admin')).toBe(numericSetting(g, 'ADMIN_PORT'));
    const upstream = new URL(environment(g).literal.UPSTREAM_URL ?? DEFAULTS.UPSTREAM_URL);
    expect(upstream.hostname).toBe('127.0.0.1');
    const backend = d.spec.template.spec.containers.find((c) => modeOf(c) === 'backend');
    if (backend) {
      expect(Number(upstream.port)).toBe(numericSetting(backend, 'BACKEND_PORT'));
      // Private to the pod: nothing but its gateway reaches it.
      expect(environment(backend).literal.HOST).toBe('127.0.0.1');
      const probes = [backend.startupProbe, backend.readinessProbe, backend.livenessProbe];
      expect(probes.every((p) => p !== undefined)).toBe(true);
      for (const p of probes) {
        // A loopback listener cannot be probed from the kubelet: the probe runs inside.
        expect(p!.exec?.command).toEqual(['node', 'deploy/healthcheck.mjs', 'backend']);
      }
    }
  });

  it('requests and limits resources for every container', () => {
    // The schema requires requests.cpu, requests.memory and limits.memory; here they are consistent.
    const bytes = (q: string) =>
      Number(q.replace(/(Ki|Mi|Gi|Ti)$/, '')) * 1024 ** (['Ki', 'Mi', 'Gi', 'Ti'].indexOf(q.slice(-2)) + 1);
    const millis = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
    for (const d of deployments()) {
      for (const c of d.spec.template.spec.containers) {
        const r = c.resources;
        expect(bytes(r.limits.memory), `${c.name} memory`).toBeGreaterThanOrEqual(bytes(r.requests.memory));
        if (r.limits.cpu) expect(millis(r.limits.cpu), `${c.name} cpu`).toBeGreaterThanOrEqual(millis(r.requests.cpu));
      }
    }
  });

  it('drains: preStop on every container, the app outliving the gateway drain, grace > drain + preStop', () => {
    const d = keygatePods()[0];
    const spec = d.spec.template.spec;
    const g = gatewayOf(d);
    const drainSeconds = numericSetting(g, 'DRAIN_TIMEOUT_MS') / 1000;
    for (const c of spec.containers) expect(preStopSeconds(c), `${c.name} preStop sleep`).toBeGreaterThan(0);
    const longestPreStop = Math.max(...spec.containers.map(preStopSeconds));
    expect(spec.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(longestPreStop + drainSeconds);
    // Containers get SIGTERM when their own preStop ends. The gateway's in-flight requests need the
    // upstream until the drain is over, so the other containers wait that long.
    for (const c of spec.containers.filter((x) => x !== g)) {
      expect(preStopSeconds(c), `${c.name} outlives the gateway's drain`).toBeGreaterThanOrEqual(
        preStopSeconds(g) + drainSeconds,
      );
    }
  });

  it('runs as non-root, without privilege escalation, read-only root filesystems for keygate', () => {
    for (const d of deployments()) {
      // runAsNonRoot: true is required by the pod schema; runAsUser, where set, is not 0.
      for (const c of d.spec.template.spec.containers) {
        expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
        if (modeOf(c)) expect(c.securityContext.readOnlyRootFilesystem, c.name).toBe(true);
      }
    }
    const uid = dockerUser();
    expect(keygatePods()[0].spec.template.spec.securityContext.runAsUser, 'the pod runs as the image USER').toBe(uid);
  });

  it('routes the Service to the gateway port only, the admin API through a ClusterIP Service of its own, and covers the pods with the PodDisruptionBudget', () => {
    const d = keygatePods()[0];
    const g = gatewayOf(d);
    const labels = d.spec.template.metadata.labels;
    const svcs = ofKind('v1 Service').filter((s) => matches(s.spec.selector, labels));
    expect(svcs.map((s) => s.metadata.name).sort()).toEqual(['keygate', 'keygate-admin-api']);
    const pub = svcs.find((s) => s.metadata.name === 'keygate')!;
    for (const p of pub.spec.ports) expect(resolvePort(g, p.targetPort), p.name).toBe(numericSetting(g, 'PORT'));
    const adminApi = svcs.find((s) => s.metadata.name === 'keygate-admin-api')!;
    expect(adminApi.spec.type ?? 'ClusterIP').toBe('ClusterIP');
    expect(adminApi.spec.ports.map((p) => resolvePort(g, p.targetPort))).toEqual([
      g.ports!.find((p) => p.name === 'admin-api')!.containerPort,
    ]);
    for (const p of adminApi.spec.ports) expect(resolvePort(g, p.targetPort)).not.toBe(numericSetting(g, 'PORT'));
    for (const pb of ofKind('policy/v1 PodDisruptionBudget')) {
      expect(matches(pb.spec.selector.matchLabels, labels), pb.metadata.name).toBe(true);
      if (typeof pb.spec.maxUnavailable === 'number') expect(pb.spec.maxUnavailable).toBeLessThan(d.spec.replicas!);
    }
  });

  it('names only non-secret, known settings in the ConfigMap', () => {
    const d = keygatePods()[0];
    const g = gatewayOf(d);
    const cms = (g.envFrom ?? []).filter((e) => e.configMapRef).map((e) => e.configMapRef!.name);
    expect(cms.length).toBeGreaterThan(0);
    for (const cm of ofKind('v1 ConfigMap').filter((m) => cms.includes(m.metadata.name))) {
      for (const k of Object.keys(cm.data)) {
        expect(KNOWN_SETTINGS.has(k), `${cm.metadata.name}.${k}`).toBe(true);
        expect(k, `${cm.metadata.name}.${k} belongs in the Secret`).not.toMatch(
          /SECRET|TOKEN|PASSWORD|DATABASE_URL|REDIS_URL/,
        );
      }
      for (const k of ['TRUST_PROXY', 'LOG_LEVEL', 'RATE_LIMIT_FAILURE_MODE', 'DRAIN_TIMEOUT_MS'])
        expect(cm.data, k).toHaveProperty(k);
    }
  });
});

// ---- Dockerfile -----------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

function dockerfile(): { instructions: Instruction[]; stages: { name?: string; image: string; workdir: string }[] } {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => !/^\s*#/.test(l));
  const logical: string[] = [];
  let cur = '';
  for (const l of lines) {
    if (/\\\s*$/.test(l)) cur += l.replace(/\\\s*$/, ' ');
    else {
      cur += l;
      if (cur.trim()) logical.push(cur.trim());
      cur = '';
    }
  }
  const instructions: Instruction[] = [];
  const stages: { name?: string; image: string; workdir: string }[] = [];
  for (const l of logical) {
    const m = /^(\w+)\s+([\s\S]*)$/.exec(l);
    if (!m) continue;
    const op = m[1].toUpperCase();
    if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(m[2].replace(/--platform=\S+\s+/, '').trim());
      stages.push({ image: f?.[1] ?? m[2], name: f?.[2], workdir: '/' });
    } else if (op === 'WORKDIR' && stages.length) {
      const last = stages[stages.length - 1];
      last.workdir = posix.resolve(last.workdir, m[2].trim());
    }
    instructions.push({ op, args: m[2].trim(), stage: stages.length - 1 });
  }
  return { instructions, stages };
}

/** COPY's flags, sources and destination (JSON or shell form). */
function copyParts(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const rest = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  return { from, sources: rest.slice(0, -1), dest: rest[rest.length - 1] };
}

function dockerUser(): number | string {
  const { instructions, stages } = dockerfile();
  const users = instructions.filter((i) => i.op === 'USER' && i.stage === stages.length - 1);
  const u = users[users.length - 1]?.args.split(':')[0] ?? 'root';
  return /^\d+$/.test(u) ? Number(u) : u;
}

/** .dockerignore semantics, enough for this file: patterns in order, the last match wins; a pattern
 * matching a parent directory matches everything under it. */
function dockerIgnored(path: string): boolean {
  const file = join(ROOT, '.dockerignore');
  if (!existsSync(file)) return false;
  const patterns = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const re = (p: string) =>
    new RegExp(
      '^' +
        p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*\*/g, '\u0000')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]')
          .replace(/\u0000/g, '.*') +
        '$',
    );
  const parts = path.replace(/\/+$/, '').split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const p = raw.replace(/^!/, '').replace(/^\/+|\/+$/g, '');
    if (prefixes.some((x) => re(p).test(x))) ignored = !negate;
  }
  return ignored;
}

describe('Dockerfile', () => {
  const { instructions, stages } = dockerfile();
  const final = stages.length - 1;
  const inStage = (s: number, op: string) => instructions.filter((i) => i.stage === s && i.op === op);
  const buildStage = stages.findIndex((s) => s.name === 'build');

  it('is multi-stage on a Node LTS slim image', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) {
      const m = /^node:(\d+)-slim$/.exec(s.image);
      expect(m, s.image).not.toBeNull();
      expect(Number(m![1]) % 2, `${s.image}: even majors are the LTS lines`).toBe(0);
      expect(Number(m![1])).toBeGreaterThanOrEqual(20);
    }
  });

  it('builds with npm ci and npm run build (tsc -p tsconfig.build.json)', () => {
    expect(buildStage).toBeGreaterThanOrEqual(0);
    expect(buildStage).not.toBe(final);
    const runs = inStage(buildStage, 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm run build\b/.test(r))).toBe(true);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.build).toMatch(/tsc -p tsconfig\.build\.json/);
  });

  it('installs only production dependencies in the final stage and takes no node_modules from the build', () => {
    const runs = inStage(final, 'RUN').map((i) => i.args);
    const installs = runs.filter((r) => /\bnpm (ci|install|i)\b/.test(r));
    expect(installs.length).toBeGreaterThan(0);
    for (const r of installs) expect(r).toMatch(/\bnpm ci\b[^&;]*--omit=dev/);
    for (const c of inStage(final, 'COPY')) expect(copyParts(c.args).sources.join(' ')).not.toMatch(/node_modules/);
  });

  it('copies the compiled JavaScript from the build stage: tsconfig.build.json outDir', () => {
    const outDir = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')).compilerOptions.outDir as string;
    const fromBuild = inStage(final, 'COPY')
      .map((c) => copyParts(c.args))
      .filter((c) => c.from === 'build');
    const dist = fromBuild.find((c) =>
      c.sources.some((s) => posix.normalize(s).replace(/\/$/, '') === posix.join(stages[buildStage].workdir, outDir)),
    );
    expect(dist, `COPY --from=build ${posix.join(stages[buildStage].workdir, outDir)}`).toBeDefined();
    expect(posix.resolve(stages[final].workdir, dist!.dest)).toBe(posix.join(stages[final].workdir, outDir));
  });

  it('puts the SQL migrations where src/db/index.ts looks for them (next to the compiled module)', () => {
    expect(readFileSync(join(ROOT, 'src/db/index.ts'), 'utf8')).toContain("new URL('./migrations/', import.meta.url)");
    const copies = inStage(final, 'COPY')
      .map((c) => copyParts(c.args))
      .filter((c) => !c.from);
    const m = copies.find((c) => c.sources.some((s) => s.replace(/\/$/, '') === 'src/db/migrations'));
    expect(m).toBeDefined();
    expect(posix.resolve(stages[final].workdir, m!.dest)).toBe(posix.join(stages[final].workdir, 'dist/db/migrations'));
    expect(readdirSync(join(ROOT, 'src/db/migrations')).filter((f) => f.endsWith('.sql')).length).toBeGreaterThan(0);
  });

  it('ships config/ in the working directory, where the data-file settings point', () => {
    for (const k of ['PLANS_FILE', 'ROUTES_FILE', 'WARMUP_BANDS_FILE'] as const) {
      expect(DEFAULTS[k]).toMatch(/^config\//);
      expect(existsSync(join(ROOT, DEFAULTS[k])), DEFAULTS[k]).toBe(true);
    }
    const copies = inStage(final, 'COPY')
      .map((c) => copyParts(c.args))
      .filter((c) => !c.from);
    const cfg = copies.find((c) => c.sources.some((s) => s.replace(/\/$/, '') === 'config'));
    expect(cfg).toBeDefined();
    expect(posix.resolve(stages[final].workdir, cfg!.dest)).toBe(posix.join(stages[final].workdir, 'config'));
  });

  it('COPYs only paths that exist in the repository and that .dockerignore lets into the context', () => {
    const sources = instructions
      .filter((i) => i.op === 'COPY' || i.op === 'ADD')
      .map((i) => copyParts(i.args))
      .filter((c) => !c.from)
      .flatMap((c) => c.sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      expect(s, 'no globs or URLs').toMatch(/^[\w./-]+$/);
      expect(existsSync(join(ROOT, s)), `${s} exists`).toBe(true);
      expect(dockerIgnored(s), `${s} is excluded by .dockerignore`).toBe(false);
    }
    // The allow-list keeps the rest out of the context.
    for (const p of ['node_modules', '.git', 'dist', '.data', 'scratch', 'test'])
      expect(dockerIgnored(p), p).toBe(true);
  });

  it('COPY --from names a stage defined before it', () => {
    for (const i of instructions.filter((x) => x.op === 'COPY')) {
      const from = copyParts(i.args).from;
      if (from)
        expect(
          stages.slice(0, i.stage).map((s) => s.name),
          from,
        ).toContain(from);
    }
  });

  it('runs as a non-root numeric USER in the final stage', () => {
    const users = inStage(final, 'USER');
    expect(users.length).toBeGreaterThan(0);
    const uid = dockerUser();
    expect(uid).not.toBe('root');
    expect(typeof uid, 'numeric, so runAsNonRoot can verify it').toBe('number');
    expect(uid).not.toBe(0);
  });

  it('has a HEALTHCHECK hitting /healthz on ADMIN_PORT with node, EXPOSEs the three ports, runs dist/cli.js gateway', () => {
    const hc = inStage(final, 'HEALTHCHECK');
    expect(hc.length).toBe(1);
    const cmd = /CMD\s+(\[.*\])\s*$/.exec(hc[0].args);
    expect(cmd).not.toBeNull();
    const argv = JSON.parse(cmd![1]) as string[];
    expect(argv[0]).toBe('node');
    const script = argv.find((a) => a.endsWith('.mjs'));
    const body = script ? readFileSync(join(ROOT, script), 'utf8') : argv.join(' ');
    expect(body).toContain('/healthz');
    expect(body).toContain('ADMIN_PORT');
    if (script) {
      const copied = inStage(final, 'COPY')
        .map((c) => copyParts(c.args))
        .some(
          (c) =>
            c.sources.includes(script) &&
            posix.resolve(stages[final].workdir, c.dest) === posix.join(stages[final].workdir, script),
        );
      expect(copied, `${script} is in the image at the same path`).toBe(true);
    }
    const exposed = inStage(final, 'EXPOSE')
      .flatMap((i) => i.args.split(/\s+/))
      .map((p) => Number(p.split('/')[0]));
    expect(exposed.sort()).toEqual([DEFAULTS.PORT, DEFAULTS.BACKEND_PORT, DEFAULTS.ADMIN_PORT].sort());
    const cmds = inStage(final, 'CMD');
    expect(JSON.parse(cmds[cmds.length - 1].args)).toEqual(['node', 'dist/cli.js', 'gateway']);
    expect(inStage(final, 'ENTRYPOINT')).toEqual([]);
  });

  it('runs the keygate containers of deploy/ with commands the image has', () => {
    for (const d of keygatePods()) {
      for (const c of d.spec.template.spec.containers.filter((x) => modeOf(x))) {
        expect(['gateway', 'backend']).toContain(modeOf(c));
        expect(c.command?.[0]).toBe('node');
        for (const p of [c.startupProbe, c.readinessProbe, c.livenessProbe]) {
          const script = p?.exec?.command.find((a) => a.endsWith('.mjs'));
          if (script) expect(existsSync(join(ROOT, script)) && !dockerIgnored(script), script).toBe(true);
        }
      }
    }
  });
});

// ---- deploy/healthcheck.mjs -----------------------------------------------------------------------

describe('deploy/healthcheck.mjs', () => {
  let admin: http.Server;
  let adminPort = 0;
  let status = 200;
  let other: http.Server;
  let otherPort = 0;
  /** A port nothing listens on. */
  let closedPort = 0;

  const listen = async (srv: http.Server) => (await listenLocal(srv)).port;
  beforeAll(async () => {
    admin = http.createServer((req, res) => {
      res.writeHead(req.url === '/healthz' ? status : 404).end();
    });
    other = http.createServer((_req, res) => res.writeHead(404).end());
    adminPort = await listen(admin);
    otherPort = await listen(other);
    const closed = http.createServer();
    closedPort = await listen(closed);
    await new Promise((r) => closed.close(r));
  });
  afterAll(async () => {
    await new Promise((r) => admin.close(r));
    await new Promise((r) => other.close(r));
  });

  const run = (args: string[], env: Record<string, string>) =>
    new Promise<number>((resolve) => {
      const child = execFile(
        process.execPath,
        [join(DEPLOY, 'healthcheck.mjs'), ...args],
        { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 10_000 },
        () => undefined,
      );
      child.on('exit', (code) => resolve(code ?? -1));
    });

  it('gateway: healthy when /healthz on ADMIN_PORT answers 200, not otherwise', async () => {
    status = 200;
    expect(await run(['gateway'], { ADMIN_PORT: String(adminPort) })).toBe(0);
    status = 503;
    expect(await run(['gateway'], { ADMIN_PORT: String(adminPort) })).toBe(1);
    // A listener that is not the admin one (404), and nothing listening.
    expect(await run(['gateway'], { ADMIN_PORT: String(otherPort) })).toBe(1);
    expect(await run(['gateway'], { ADMIN_PORT: String(closedPort) })).toBe(1);
  });

  it('backend: healthy when BACKEND_PORT answers HTTP at all, not when nothing listens', async () => {
    expect(await run(['backend'], { BACKEND_PORT: String(otherPort), HOST: '127.0.0.1' })).toBe(0);
    expect(await run(['backend'], { BACKEND_PORT: String(closedPort) })).toBe(1);
  });
});

// ---- Kustomize: deploy/base and the overlays, rendered by kubectl ------------------------------

describe('deploy/ as a Kustomize base with overlays', () => {
  const KUBECTL = process.env.KUBECTL ?? '/usr/bin/kubectl';
  const render = (dir: string) => {
    const text = execFileSync(KUBECTL, ['kustomize', join(DEPLOY, dir)], { encoding: 'utf8' });
    return parseAllDocuments(text).map(
      (d) => d.toJS() as { apiVersion: string; kind: string; metadata: { name: string } },
    );
  };
  const valid = (rendered: ReturnType<typeof render>, overlay: string) => {
    for (const o of rendered) {
      const schema = KINDS[`${o.apiVersion} ${o.kind}` as keyof typeof KINDS];
      expect(schema, `${overlay}: ${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(issues(schema, o), `${overlay}: ${o.kind} ${o.metadata.name}`).toEqual([]);
    }
  };
  const names = (rendered: ReturnType<typeof render>) => rendered.map((o) => `${o.kind}/${o.metadata.name}`).sort();
  const baseObjects = docs
    .filter((d) => d.file.startsWith('deploy/base/'))
    .map((d) => d.value as { kind: string; metadata: { name: string } });

  it('kubectl is installed (.ci/run installs it when absent)', () => {
    expect(existsSync(KUBECTL), KUBECTL).toBe(true);
  });

  it('the base renders to exactly its files, and the sidecar overlay to the base', () => {
    const base = render('base');
    valid(base, 'base');
    expect(names(base)).toEqual(baseObjects.map((o) => `${o.kind}/${o.metadata.name}`).sort());
    const sidecar = render('overlays/sidecar');
    valid(sidecar, 'sidecar');
    expect(sidecar).toEqual(base);
  });

  it('standalone: a gateway-only Deployment forwarding to a cluster Service', () => {
    const rendered = render('overlays/standalone');
    valid(rendered, 'standalone');
    const d = deployment.parse(rendered.find((o) => o.kind === 'Deployment'));
    const containers = d.spec.template.spec.containers;
    expect(containers.map((c) => modeOf(c))).toEqual(['gateway']);
    const upstream = new URL(containers[0].env!.find((e) => e.name === 'UPSTREAM_URL')!.value!);
    expect(upstream.hostname).not.toBe('127.0.0.1');
    expect(upstream.hostname).toMatch(/\.svc(\.cluster\.local)?$/);
    // Still behind the same public and admin-API Services, PDB and ConfigMaps.
    expect(names(rendered)).toEqual(names(render('base')));
    // A gateway-only pod carries no backend secrets.
    expect(
      containers[0]
        .env!.filter((e) => e.valueFrom?.secretKeyRef)
        .map((e) => e.name)
        .sort(),
    ).toEqual(['DATABASE_URL', 'GATEWAY_SECRET', 'REDIS_URL']);
  });

  it('hpa: an autoscaler on CPU for the Deployment, which no longer fixes its replicas', () => {
    const rendered = render('overlays/hpa');
    valid(rendered, 'hpa');
    const h = hpa.parse(rendered.find((o) => o.kind === 'HorizontalPodAutoscaler'));
    const d = deployment.parse(rendered.find((o) => o.kind === 'Deployment'));
    expect(h.spec.scaleTargetRef.name).toBe(d.metadata.name);
    expect(h.spec.metrics.map((m) => m.resource.name)).toEqual(['cpu']);
    expect(d.spec.replicas).toBeUndefined();
    // Utilization is measured against requests: every container must request CPU.
    for (const c of d.spec.template.spec.containers) expect(c.resources.requests.cpu, c.name).toBeDefined();
    // The PDB still leaves pods when the autoscaler is at its minimum.
    const pb = pdb.parse(rendered.find((o) => o.kind === 'PodDisruptionBudget'));
    if (typeof pb.spec.maxUnavailable === 'number') expect(pb.spec.maxUnavailable).toBeLessThan(h.spec.minReplicas);
  });
});
