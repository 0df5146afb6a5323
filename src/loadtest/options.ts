// The load test's command line: `npm run loadtest -- --url URL --key KEY [...]` (docs/loadtest.md).
import { strictArgs, UsageError, type OptionSpecs } from '../cli/args.js';
import { readProfileTarget, type ProfileTarget } from './profile.js';

export { UsageError };

export interface RouteSpec {
  method: string;
  path: string;
  weight: number;
  /** A JSON body for the verbs that carry one. */
  body?: string;
}

export interface LoadTestOptions {
  urls: string[];
  keys: string[];
  routes: RouteSpec[];
  /** Seconds. */
  duration: number;
  /** Stop after this many requests (or at the end of the duration, whichever comes first). */
  requests: number | null;
  /** Requests per second over all connections; null: as fast as the gateway answers. */
  rate: number | null;
  connections: number;
  /** Client addresses to claim in X-Forwarded-For, in rotation (only a gateway that trusts the tester believes them). */
  addresses: string[];
  /** Hold a key and bucket back for the Retry-After of a refusal, then check the next answer comes from a fresh window. */
  honourRetryAfter: boolean;
  /** Where the JSON and HTML reports go. */
  outDir: string;
  /** The live progress line on stderr. */
  progress: boolean;
  timeoutMs: number;
  /** The rest profile the gateway serves (`--profile`); null: the workspace API. */
  profile: ProfileTarget | null;
}

export const LOADTEST_USAGE = `Usage: npm run loadtest -- --url URL --key KEY [options]

Loads a running keygate and audits the answers: throughput, latency, answers by status and code, and
whether every rate-limit window held exactly the budget its headers announced.

  --url URL            a gateway's base URL (repeat for several instances: requests alternate)
  --key KEY            an API key (repeat for several; svc_v1_ keys travel as X-Api-Key, others as Bearer;
                       under --profile, as the profile's key field says)
  --profile FILE       the rest profile the gateway serves: its key field, routes, refusal codes, header
                       families and address layer (a workspace profile: as without it)
  --route "M /path[ weight][ json]"
                       a route of the mix (repeat; default "GET /v2/workspaces/100/tags", or
                       "GET /v1/email-accounts" when every key is a partner key, or under --profile the
                       profile's first forwarded GET route); weight defaults to 1
  --duration S         seconds of load (default 30)
  --requests N         stop after N requests, if the duration has not ended first
  --rate N             paced: N requests per second over all connections (default: saturating)
  --connections N      concurrent connections per URL (default 10)
  --addresses N|LIST   claim N client addresses from 10.77.0.0/16, or the given comma-separated list,
                       in X-Forwarded-For (the gateway must trust the tester: TRUST_PROXY)
  --no-retry-wait      do not hold a key back for its Retry-After
  --out DIR            where report.json and report.html go (default loadtest-results/<time>)
  --timeout MS         per-request timeout (default 10000)
  --quiet              no progress line
`;

const int = (name: string, v: string, min: number, max: number): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(v)}`);
  return n;
};

export function parseRoute(spec: string): RouteSpec {
  const m = /^\s*([A-Za-z]+)\s+(\/\S*)(?:\s+(\d+))?(?:\s+(\{.*\}|\[.*\]))?\s*$/.exec(spec);
  if (!m) throw new UsageError(`--route ${JSON.stringify(spec)}: expected "METHOD /path [weight] [json body]"`);
  const weight = m[3] === undefined ? 1 : int('route weight', m[3], 1, 1000);
  if (m[4] !== undefined) {
    try {
      JSON.parse(m[4]);
    } catch {
      throw new UsageError(`--route ${JSON.stringify(spec)}: the body is not JSON`);
    }
  }
  return { method: m[1].toUpperCase(), path: m[2], weight, body: m[4] };
}

/** What node:util's parseArgs is given: the options of LOADTEST_USAGE, with their defaults. */
const OPTIONS: OptionSpecs = {
  url: { type: 'string', multiple: true },
  key: { type: 'string', multiple: true },
  route: { type: 'string', multiple: true },
  duration: { type: 'string', default: '30' },
  requests: { type: 'string' },
  rate: { type: 'string' },
  connections: { type: 'string', default: '10' },
  addresses: { type: 'string' },
  'no-retry-wait': { type: 'boolean' },
  out: { type: 'string' },
  timeout: { type: 'string', default: '10000' },
  quiet: { type: 'boolean' },
  profile: { type: 'string' },
};

interface Values {
  url?: string[];
  key?: string[];
  route?: string[];
  duration: string;
  requests?: string;
  rate?: string;
  connections: string;
  addresses?: string;
  'no-retry-wait'?: boolean;
  out?: string;
  timeout: string;
  quiet?: boolean;
  profile?: string;
}

export function parseOptions(
  argv: string[],
  now = new Date(),
  readProfile: (file: string) => ProfileTarget | null = readProfileTarget,
): LoadTestOptions {
  const v = strictArgs(argv, OPTIONS, false).values as unknown as Values;
  const urls = (v.url ?? []).map((u) => {
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new UsageError(`--url ${JSON.stringify(u)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageError(`--url ${JSON.stringify(u)}: http or https only`);
    return url.origin;
  });
  if (urls.length === 0) throw new UsageError('--url is required');
  const keys = v.key ?? [];
  if (keys.length === 0) throw new UsageError('--key is required');
  for (const k of keys)
    if (!/^[\x21-\x7e]{8,512}$/.test(k))
      throw new UsageError('a --key holds characters a header cannot carry, or is too short');
  const profile = v.profile === undefined ? null : readProfile(v.profile);
  const partnerOnly = keys.every((k) => k.startsWith('svc_v1_'));
  let fallback = partnerOnly ? 'GET /v1/email-accounts' : 'GET /v2/workspaces/100/tags';
  if (profile) {
    if (profile.defaultRoute === null)
      throw new UsageError(`--profile ${v.profile}: no forwarded GET route to load by default; give --route`);
    fallback = `GET ${profile.defaultRoute}`;
  }
  const routes = (v.route ?? [fallback]).map(parseRoute);
  let addresses: string[] = [];
  if (v.addresses !== undefined) {
    if (/^\d+$/.test(v.addresses)) {
      const n = int('addresses', v.addresses, 1, 65_536);
      addresses = Array.from({ length: n }, (_, i) => `10.77.${i >> 8}.${i & 255}`);
    } else {
      addresses = v.addresses.split(',').map((a) => a.trim());
      for (const a of addresses)
        if (!/^[0-9a-fA-F.:]{2,45}$/.test(a))
          throw new UsageError(`--addresses: ${JSON.stringify(a)} is not an address`);
    }
  }
  return {
    urls,
    keys,
    routes,
    duration: int('duration', v.duration, 1, 86_400),
    requests: v.requests === undefined ? null : int('requests', v.requests, 1, 1_000_000_000),
    rate: v.rate === undefined ? null : int('rate', v.rate, 1, 1_000_000),
    connections: int('connections', v.connections, 1, 10_000),
    addresses,
    honourRetryAfter: !v['no-retry-wait'],
    outDir: v.out ?? `loadtest-results/${now.toISOString().replace(/[:.]/g, '-')}`,
    progress: !v.quiet,
    timeoutMs: int('timeout', v.timeout, 100, 600_000),
    profile,
  };
}
