// The operators' kit under deploy/: the Grafana dashboard and the Prometheus alert rules, checked
// against what the gateway really exports (a scrape of a real stack's /metrics), the dashboard against
// a JSON schema of the fields Grafana needs, the rules with promtool where it is installed; and the
// plan and route tables shipped as a ConfigMap, against config/.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { loadPlans } from '../../src/config/plans.js';
import { loadRoutes } from '../../src/config/routes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES_FILE = join(ROOT, 'deploy/prometheus/keygate-alerts.yaml');
const DASHBOARD_FILE = join(ROOT, 'deploy/grafana/keygate-dashboard.json');
const SCHEMA_FILE = join(ROOT, 'deploy/grafana/dashboard.schema.json');
const PROMTOOL = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
const NO_PROMTOOL =
  'promtool is not on PATH (Debian: apt-get install prometheus); the schema and metric-name checks still ran';

function run(cmd: string, args: string[], cwd = ROOT): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

// ---- what the gateway exports ---------------------------------------------------------------------

interface Exported {
  /** Every series name a query can select: counters and gauges by name, histograms' _bucket/_sum/_count. */
  names: Set<string>;
  /** The label names seen on samples of each series name. */
  labels: Map<string, Set<string>>;
  /** Each exposition read, as scraped. */
  texts: string[];
}

function readExposition(text: string, into: Exported): void {
  into.texts.push(text);
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type;
      const series =
        kind === 'histogram'
          ? [`${name}_bucket`, `${name}_sum`, `${name}_count`]
          : kind === 'summary'
            ? [name, `${name}_sum`, `${name}_count`]
            : [name];
      for (const s of series) into.names.add(s);
      continue;
    }
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample) continue;
    const seen = into.labels.get(sample[1]) ?? new Set<string>();
    for (const m of (sample[2] ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="/g)) seen.add(m[1]);
    into.labels.set(sample[1], seen);
  }
}

// ---- PromQL, as much as the checks need -----------------------------------------------------------

/** Aggregations, keywords and operators: identifiers of PromQL that are not metric names. */
const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
  'Inf',
  'NaN',
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

interface Selector {
  metric: string;
  /** Label names of its matchers (`{instance=~"$instance",status=~"5.."}` → instance, status). */
  labels: string[];
}

/**
 * The metric selectors of a PromQL expression. String literals are blanked, range and subquery brackets
 * dropped and grouping label lists (`by (le, op)`) removed first; then every identifier not followed by
 * `(` (a function or aggregation), not a keyword, not part of a number, a duration or a `$variable`
 * is a metric name, with the label names of the matchers after it.
 */
export function selectorsOf(expr: string): Selector[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '$1');
  const out: Selector[] = [];
  const word = /[A-Za-z_:][A-Za-z0-9_:]*/g;
  for (let m = word.exec(e); m; m = word.exec(e)) {
    if (/[0-9.$]/.test(e[m.index - 1] ?? ' ')) continue;
    const rest = e.slice(m.index + m[0].length);
    const next = rest.trimStart();
    if (next.startsWith('(') || PROMQL_WORDS.has(m[0])) continue;
    let labels: string[] = [];
    if (next.startsWith('{')) {
      const body = next.slice(1, next.indexOf('}'));
      labels = [...body.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]);
      word.lastIndex = m.index + m[0].length + (rest.length - next.length) + body.length + 2;
    }
    out.push({ metric: m[0], labels });
  }
  return out;
}

/** Labels Prometheus attaches itself (target labels) or that histograms carry. */
const TARGET_LABELS = new Set(['instance', 'job', 'pod', 'namespace']);

function checkSelectors(where: string, expr: string, exported: Exported): Selector[] {
  const found = selectorsOf(expr);
  expect(found.length, `${where}: no metric in ${expr}`).toBeGreaterThan(0);
  for (const s of found) {
    expect(s.metric, `${where}: ${s.metric}`).toMatch(/^keygate_/);
    expect(exported.names.has(s.metric), `${where}: ${s.metric} is not exported by the gateway`).toBe(true);
    // Label names can be checked where the scrape holds samples of the series.
    const seen = exported.labels.get(s.metric);
    if (seen)
      for (const l of s.labels)
        if (!TARGET_LABELS.has(l)) expect(seen.has(l), `${where}: ${s.metric} has no label ${l}`).toBe(true);
  }
  return found;
}

describe('selectorsOf (the PromQL reading the checks rely on)', () => {
  it('finds metrics and matcher labels, skipping functions, aggregations, groupings, numbers and variables', () => {
    expect(
      selectorsOf(
        'histogram_quantile(0.99, sum by (le, op) (rate(keygate_redis_duration_seconds_bucket{instance=~"$instance",outcome="ok"}[$__rate_interval]))) > 1e-3',
      ),
    ).toEqual([{ metric: 'keygate_redis_duration_seconds_bucket', labels: ['instance', 'outcome'] }]);
    expect(
      selectorsOf(
        'sum(rate(a_total{x="b{c}"}[5m])) / clamp_min(sum(rate(b_total[5m] offset 1h)), 1e-9) and absent(c)',
      ).map((s) => s.metric),
    ).toEqual(['a_total', 'b_total', 'c']);
    expect(selectorsOf('max by (instance) (keygate_degraded) == 1')).toEqual([
      { metric: 'keygate_degraded', labels: [] },
    ]);
  });
});

// ---- the files ------------------------------------------------------------------------------------

const duration = z.string().regex(/^([0-9]+(ms|s|m|h|d|w|y))+$/, 'a Prometheus duration like 5m');
const alertingRule = z.strictObject({
  alert: z.string().regex(/^[A-Z][A-Za-z0-9]+$/, 'CamelCase alert name'),
  expr: z.string().min(1),
  for: duration.optional(),
  keep_firing_for: duration.optional(),
  labels: z.object({ severity: z.enum(['critical', 'warning', 'info']) }).catchall(z.string()),
  annotations: z.object({ summary: z.string().min(10), description: z.string().min(40) }).catchall(z.string()),
});
const recordingRule = z.strictObject({
  record: z.string().regex(/^[a-z_]+:[a-z0-9_:]+$/, 'level:metric:operations'),
  expr: z.string().min(1),
  labels: z.record(z.string(), z.string()).optional(),
});
const ruleFile = z.strictObject({
  groups: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        interval: duration.optional(),
        limit: z.number().int().optional(),
        rules: z.array(z.union([alertingRule, recordingRule])).min(1),
      }),
    )
    .min(1),
});
type AlertingRule = z.infer<typeof alertingRule>;

const rulesText = readFileSync(RULES_FILE, 'utf8');
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'));

describe('deploy/prometheus/keygate-alerts.yaml', () => {
  const doc = parseDocument(rulesText);
  const rules = () => ruleFile.parse(doc.toJS());
  const alerts = () =>
    rules()
      .groups.flatMap((g) => g.rules)
      .filter((r): r is AlertingRule => 'alert' in r);

  it('is one YAML document that parses cleanly', () => {
    expect(parseAllDocuments(rulesText)).toHaveLength(1);
    expect([...doc.errors, ...doc.warnings].map((e) => e.message)).toEqual([]);
  });

  it('has the fields Prometheus requires on every rule, a severity, a summary and a description', () => {
    const r = ruleFile.safeParse(doc.toJS());
    expect(r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([]);
    const names = alerts().map((a) => a.alert);
    expect(new Set(names).size, 'alert names are unique').toBe(names.length);
    const groups = rules().groups.map((g) => g.name);
    expect(new Set(groups).size, 'group names are unique').toBe(groups.length);
  });

  it('alerts on Redis degraded, the upstream 5xx rate, cooldown spikes and keys near their limit', () => {
    const byName = new Map(alerts().map((a) => [a.alert, a]));
    const uses = (name: string, metric: string, matcher?: RegExp) => {
      const a = byName.get(name);
      expect(a, name).toBeDefined();
      expect(
        selectorsOf(a!.expr).map((s) => s.metric),
        name,
      ).toContain(metric);
      if (matcher) expect(a!.expr, name).toMatch(matcher);
    };
    uses('KeygateRedisDegraded', 'keygate_degraded');
    uses('KeygateUpstream5xxRate', 'keygate_requests_total', /status=~"5\.\."/);
    uses('KeygateUpstreamUnreachable', 'keygate_upstream_failures_total');
    uses('KeygateAuthCooldownSpike', 'keygate_auth_failures_total', /kind="cooldown"/);
    uses('KeygateKeysNearLimit', 'keygate_rate_limit_near_limit_total');
    expect(byName.get('KeygateRedisDegraded')!.labels.severity).toBe('critical');
  });
});

describe('deploy/grafana/keygate-dashboard.json', () => {
  const schema = z.fromJSONSchema(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')));
  const issues = (v: unknown) => {
    const r = schema.safeParse(v);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  };
  const panels = dashboard.panels as {
    id: number;
    type: string;
    title: string;
    gridPos: { x: number; y: number; w: number; h: number };
    targets?: { refId: string; expr: string }[];
    datasource?: { uid: string };
  }[];
  const variables = (dashboard.templating.list as { name: string; type: string; query: unknown }[]).map((v) => v.name);

  it('validates against the JSON schema of the fields Grafana needs', () => {
    expect(issues(dashboard)).toEqual([]);
  });

  it('the schema is not vacuous: it refuses what Grafana would refuse or show empty', () => {
    const clone = () => JSON.parse(JSON.stringify(dashboard));
    const noTitle = clone();
    delete noTitle.title;
    const noTargets = clone();
    delete noTargets.panels.find((p: { type: string }) => p.type === 'timeseries').targets;
    const tooWide = clone();
    tooWide.panels[1].gridPos.w = 30;
    const noExpr = clone();
    noExpr.panels.find((p: { type: string }) => p.type === 'stat').targets[0].expr = '';
    const unknownType = clone();
    unknownType.panels[1].type = 'graph-old';
    for (const [what, bad] of Object.entries({ noTitle, noTargets, tooWide, noExpr, unknownType }))
      expect(issues(bad).length, what).toBeGreaterThan(0);
  });

  it('lays the panels out on the 24-column grid: unique ids, inside the grid, no two overlapping', () => {
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
    const overlap = (a: (typeof panels)[0]['gridPos'], b: (typeof panels)[0]['gridPos']) =>
      a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (const [i, a] of panels.entries())
      for (const b of panels.slice(i + 1)) expect(overlap(a.gridPos, b.gridPos), `${a.title} / ${b.title}`).toBe(false);
  });

  it('queries through the datasource variable and uses only defined variables', () => {
    expect(dashboard.templating.list.find((v: { name: string }) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    const builtins = new Set(['__rate_interval', '__interval', '__range']);
    for (const p of panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
      for (const t of p.targets!)
        for (const v of t.expr.matchAll(/\$\{?(\w+)/g))
          expect(builtins.has(v[1]) || variables.includes(v[1]), `${p.title}: $${v[1]}`).toBe(true);
    }
  });
});

// ---- against a real scrape ------------------------------------------------------------------------

describe('every metric the kit names is one the gateway exports', () => {
  let s: Stack;
  const exported: Exported = { names: new Set(), labels: new Map(), texts: [] };
  beforeAll(async () => {
    // Through the resilient Redis stores where a Redis is configured, so the Redis histogram has samples.
    const redisUrl = process.env.REDIS_URL;
    s = await startStack({
      clock: new FakeClock(),
      ...(redisUrl ? { appStores: true, env: { REDIS_URL: redisUrl } } : {}),
    });
    // Traffic that gives most series samples (and so label names to check): accepted, near the
    // limit, rejected, an unknown key up to the cooldown, a cache hit and miss, /v1.
    for (let i = 0; i < 21; i++) await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.7.0.1' });
    for (let i = 0; i < 6; i++)
      await s.request('GET', '/v2/workspaces/100/tags', { key: 'svc_ws_' + 'Q'.repeat(40), ip: '10.7.0.2' });
    await s.request('GET', '/v1/rate-limit', { apiKey: K.partner, ip: '10.7.0.3' });
    readExposition(await (await fetch(s.adminUrl + '/metrics')).text(), exported);
    // The process metrics (CPU, memory, event loop) are collected outside tests only (startApp passes
    // defaults: !ephemeralPorts): the same createMetrics with defaults on supplies their names.
    readExposition(await createMetrics({ defaults: true }).registry.metrics(), exported);
  });
  afterAll(async () => s?.close());

  it('the scrape holds the gateway metrics, with samples', () => {
    for (const n of [
      'keygate_requests_total',
      'keygate_degraded',
      'keygate_rate_limit_decisions_total',
      'keygate_rate_limit_near_limit_total',
      'keygate_auth_failures_total',
      'keygate_request_duration_seconds_bucket',
    ])
      expect(exported.names.has(n), n).toBe(true);
    expect(exported.labels.get('keygate_auth_failures_total')).toEqual(new Set(['kind']));
  });

  it('in every alert expression', () => {
    const rules = ruleFile.parse(parseDocument(rulesText).toJS());
    for (const r of rules.groups.flatMap((g) => g.rules))
      checkSelectors('alert' in r ? r.alert : r.record, r.expr, exported);
  });

  it('in every dashboard panel and variable query', () => {
    for (const p of dashboard.panels as { title: string; targets?: { expr: string }[] }[])
      for (const t of p.targets ?? []) checkSelectors(p.title, t.expr, exported);
    for (const v of dashboard.templating.list as { name: string; definition?: string }[]) {
      if (!v.definition) continue;
      const lv = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.definition);
      expect(lv, `$${v.name}: ${v.definition}`).not.toBeNull();
      expect(exported.names.has(lv![1]), `$${v.name}: ${lv![1]}`).toBe(true);
    }
  });

  it('passes `promtool check metrics` (no _total gauge, units in names)', async (ctx) => {
    if (!PROMTOOL) return ctx.skip(NO_PROMTOOL);
    const dir = mkdtempSync(join(tmpdir(), 'keygate-promtool-'));
    try {
      for (const [i, text] of exported.texts.entries()) {
        writeFileSync(join(dir, `metrics${i}.txt`), text);
        const r = await run('sh', ['-c', `promtool check metrics < metrics${i}.txt`], dir);
        expect(r.out.trim(), r.out).toBe('');
        expect(r.code).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the renamed prom-client gauges: no gauge ends in _total, every counter does', () => {
    for (const m of exported.texts.join('\n').matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      if (m[2] === 'counter') expect(m[1], m[1]).toMatch(/_total$/);
      else expect(m[1], m[1]).not.toMatch(/_total$/);
    }
    expect(exported.names.has('keygate_nodejs_active_handles_all')).toBe(true);
  });
});

// ---- promtool on the rules ------------------------------------------------------------------------

describe('promtool', () => {
  it('check rules: the rule file is valid, templates included', async (ctx) => {
    if (!PROMTOOL) return ctx.skip(NO_PROMTOOL);
    const r = await run('promtool', ['check', 'rules', RULES_FILE]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('test rules: the alerts fire for the series they are about, and only after their `for`', async (ctx) => {
    if (!PROMTOOL) return ctx.skip(NO_PROMTOOL);
    // The annotations are left out of the copy under test: promtool compares them whole, and their
    // templates were checked above. Labels, expressions and `for` are what this scenario is about.
    const rules = ruleFile.parse(parseDocument(rulesText).toJS());
    for (const g of rules.groups)
      for (const r of g.rules) if ('annotations' in r) delete (r as Partial<AlertingRule>).annotations;
    const route = 'route="/v2/workspaces/{workspaceId}/accounts",method="GET"';
    const scenario = {
      rule_files: ['rules.yaml'],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [
            // Instance a loses Redis at minute 2; b never does.
            { series: 'keygate_degraded{instance="a"}', values: '0 0 1x10' },
            { series: 'keygate_degraded{instance="b"}', values: '0x12' },
            // a: 6 of 66 responses a minute are 502 (9%); b: half are 500, but only 2 a minute.
            { series: `keygate_requests_total{instance="a",${route},status="200",code=""}`, values: '0+60x30' },
            {
              series: `keygate_requests_total{instance="a",${route},status="502",code="bad_gateway"}`,
              values: '0+6x30',
            },
            { series: `keygate_requests_total{instance="b",${route},status="200",code=""}`, values: '0+1x30' },
            { series: `keygate_requests_total{instance="b",${route},status="500",code=""}`, values: '0+1x30' },
            // a refuses one request a second from addresses in cooldown; b one every ten seconds.
            { series: 'keygate_auth_failures_total{instance="a",kind="cooldown"}', values: '0+60x30' },
            { series: 'keygate_auth_failures_total{instance="b",kind="cooldown"}', values: '0+6x30' },
            // 16 key buckets a minute used up across the two instances; 3 addresses a minute.
            { series: 'keygate_rate_limit_near_limit_total{instance="a",layer="key"}', values: '0+8x40' },
            { series: 'keygate_rate_limit_near_limit_total{instance="b",layer="key"}', values: '0+8x40' },
            { series: 'keygate_rate_limit_near_limit_total{instance="a",layer="ip"}', values: '0+3x40' },
          ],
          alert_rule_test: [
            { eval_time: '3m', alertname: 'KeygateRedisDegraded', exp_alerts: [] },
            {
              eval_time: '5m',
              alertname: 'KeygateRedisDegraded',
              exp_alerts: [{ exp_labels: { severity: 'critical', instance: 'a' } }],
            },
            { eval_time: '3m', alertname: 'KeygateUpstream5xxRate', exp_alerts: [] },
            {
              eval_time: '15m',
              alertname: 'KeygateUpstream5xxRate',
              exp_alerts: [{ exp_labels: { severity: 'critical', instance: 'a' } }],
            },
            { eval_time: '3m', alertname: 'KeygateAuthCooldownSpike', exp_alerts: [] },
            {
              eval_time: '15m',
              alertname: 'KeygateAuthCooldownSpike',
              exp_alerts: [{ exp_labels: { severity: 'warning', instance: 'a' } }],
            },
            { eval_time: '10m', alertname: 'KeygateKeysNearLimit', exp_alerts: [] },
            {
              eval_time: '35m',
              alertname: 'KeygateKeysNearLimit',
              exp_alerts: [{ exp_labels: { severity: 'info', layer: 'key' } }],
            },
          ],
        },
      ],
    };
    const dir = mkdtempSync(join(tmpdir(), 'keygate-promtool-'));
    try {
      writeFileSync(join(dir, 'rules.yaml'), stringify(rules));
      writeFileSync(join(dir, 'test.yaml'), stringify(scenario));
      const r = await run('promtool', ['test', 'rules', 'test.yaml'], dir);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toContain('SUCCESS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---- the tables ConfigMap -------------------------------------------------------------------------

describe('deploy/base/tables-configmap.yaml', () => {
  const cm = parseDocument(readFileSync(join(ROOT, 'deploy/base/tables-configmap.yaml'), 'utf8')).toJS() as {
    metadata: { name: string };
    data: Record<string, string>;
  };

  it('is what `node deploy/sync-tables.mjs` makes of config/plans.json and config/routes.json', async () => {
    const r = await run(process.execPath, [join(ROOT, 'deploy/sync-tables.mjs'), '--check']);
    expect(r.code, r.out).toBe(0);
    expect(JSON.parse(cm.data['plans.json'])).toEqual(
      JSON.parse(readFileSync(join(ROOT, 'config/plans.json'), 'utf8')),
    );
    expect(JSON.parse(cm.data['routes.json'])).toEqual(
      JSON.parse(readFileSync(join(ROOT, 'config/routes.json'), 'utf8')),
    );
  });

  it('holds tables the loaders accept, mounted in every keygate container where PLANS_FILE and ROUTES_FILE point', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keygate-tables-'));
    try {
      for (const [k, v] of Object.entries(cm.data)) writeFileSync(join(dir, k), v);
      expect(() => loadPlans(join(dir, 'plans.json'))).not.toThrow();
      expect(() => loadRoutes(join(dir, 'routes.json'))).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const settings = (
      parseDocument(readFileSync(join(ROOT, 'deploy/base/configmap.yaml'), 'utf8')).toJS() as {
        data: Record<string, string>;
      }
    ).data;
    type Container = {
      name: string;
      command?: string[];
      volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
    };
    const deployment = parseDocument(readFileSync(join(ROOT, 'deploy/base/deployment.yaml'), 'utf8')).toJS() as {
      spec: {
        template: { spec: { containers: Container[]; volumes: { name: string; configMap?: { name: string } }[] } };
      };
    };
    const pod = deployment.spec.template.spec;
    const volume = pod.volumes.find((v) => v.configMap?.name === cm.metadata.name);
    expect(volume, `a volume from ConfigMap ${cm.metadata.name}`).toBeDefined();
    const keygate = pod.containers.filter((c) => c.command?.includes('dist/cli.js'));
    expect(keygate.map((c) => c.name).sort()).toEqual(['app', 'gateway']);
    for (const c of keygate) {
      const mount = c.volumeMounts?.find((m) => m.name === volume!.name);
      expect(mount, c.name).toBeDefined();
      // A subPath mount never sees ConfigMap updates: the directory must be mounted whole.
      expect(mount!.subPath, c.name).toBeUndefined();
      expect(mount!.readOnly, c.name).toBe(true);
      expect(settings.PLANS_FILE).toBe(join(mount!.mountPath, 'plans.json'));
      expect(settings.ROUTES_FILE).toBe(join(mount!.mountPath, 'routes.json'));
    }
  });
});
