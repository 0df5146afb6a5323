// What the guards of one request read: the parsed request line, the client, and the services. The
// guards never write to it; the pipeline notes the outcome (route template, code, key) for metrics
// and the access log in `trace`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { RouteDef, Routes } from '../config/routes.js';
import type { Plans } from '../config/plans.js';
import type { AccessResolver } from '../access/resolver.js';
import type { LayerState, SharedStores } from '../limits/types.js';
import type { Clock } from '../ops/clock.js';
import type { GatewayMetrics } from '../ops/metrics.js';
import type { Upstreams } from './upstreams/registry.js';
import type { ResponseFields } from './fields.js';
import type { BodyBudget } from './body-budget.js';
import type { Lingering } from './linger.js';
import type { TrustedProxies } from '../http/client-ip.js';
import type { JwtSigner } from '../http/identity-jwt.js';
import type { Cors } from './cors.js';
import type { LimitLayer } from './refusal.js';
import type { RequestTrace, Tracing } from '../ops/tracing.js';
import type { Principal } from '../access/principal.js';
import type { Granted } from './guards/permission.js';
import type { Profile } from '../config/profile/types.js';
import type { GatewayInterface } from './interfaces.js';

/** An interface's id: `v2`, `v1`, or a profile's name (its InterfaceSpec's id). */
export type Api = string;

/** RATE_LIMIT_MODE, a plan's or a route's limitMode: limits refuse, or only log and count (./shadow.ts). */
export type LimitMode = 'enforce' | 'shadow';

export interface GatewayDeps {
  /** The profile in force (docs/profiles.md): its interfaces are what the pipeline's phases read. */
  profile: () => Profile;
  routes: () => Routes;
  plans: () => Plans;
  access: AccessResolver;
  stores: SharedStores;
  /** The services of the configuration in force: a route's upstream (./upstreams/registry.ts). */
  upstreams: Pick<Upstreams, 'of'>;
  trusted: TrustedProxies;
  clock: Clock;
  log: Logger;
  metrics: GatewayMetrics;
  gatewaySecret: string;
  /** IDENTITY_FORMAT: the HMAC identity headers (docs/decisions.md section 5), a signed JWT, or both. */
  identityHmac: boolean;
  identityJwt: JwtSigner | null;
  bodyLimitBytes: number;
  /** REQUEST_TARGET_MAX_BYTES: a longer target is answered 414 at step 1. */
  targetMaxBytes: number;
  bodyTimeoutMs: number;
  bodyBudget: BodyBudget;
  /** A refused upload's connection: read and discarded for this long before it closes (./linger.ts). */
  linger: Lingering;
  accessLog: boolean;
  cors: Cors;
  /** The API description served at `path` (GET /v2/openapi.json, /v1/openapi.json), or null. */
  openApi: (path: string) => Buffer | null;
  /** Counts each answered request of a known organization, accepted or refused (the admin console's chart). */
  traffic?: (organizationId: number, refused: boolean) => void;
  /** Counts each answered request by key and outcome for the usage history (src/access/usage/). */
  usage?: (api: Api, trace: Trace, status: number) => void;
  /** Hears each organization's monthly quota after a request spent it (the quota's threshold events). */
  monthSpent?: (organizationId: number, month: LayerState, now: number) => void;
  /** OpenTelemetry tracing (src/ops/tracing.ts); null when not configured, and then nothing is traced. */
  tracing?: Tracing<AccessResolver> | null;
  /** RATE_LIMIT_MODE: limits refuse (enforce, the default) or only log and count (shadow); see ./shadow.ts. */
  limitMode?: LimitMode;
  /**
   * WebSocket tunnels (./websocket.ts): WEBSOCKET_RECHECK_MS, how often an open tunnel's key is checked
   * again; WEBSOCKET_MAX_TUNNELS, how many may be open (unset: from the descriptor limit).
   */
  websocket?: { recheckMs: number; maxTunnels?: number };
}

export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly api: Api;
  /** The interface the request's path belongs to (its profile's), or the first one for a path outside every one. */
  readonly iface: GatewayInterface;
  /** The path is an interface's; otherwise the request is answered 404 before any phase. */
  readonly served: boolean;
  readonly requestId: string;
  /** The client address (docs/decisions.md section 3, "Client IP"), IPv4-mapped IPv6 written as IPv4. */
  readonly ip: string;
  readonly method: string;
  /** The path of the origin-form target, without its query. */
  readonly path: string;
  /** The origin-form target exactly as the client sent it (an absolute-form target reduced to it). */
  readonly target: string;
  readonly started: number;
  readonly trace: Trace;
  /**
   * The gateway's own response fields (X-Request-Id, the rate-limit fields, Retry-After) as a flat
   * name, value list, written with the status line in one writeHead: cheaper than a setHeader each.
   */
  readonly head: ResponseFields;
  /** The request's span when tracing is on, else null. */
  readonly span: RequestTrace<AccessResolver> | null;
  /**
   * An `Upgrade: websocket` request: its socket and the bytes read past its head. `res` then writes
   * on that socket (refusals are ordinary answers); once authorized it is tunnelled (./websocket.ts).
   */
  readonly upgrade?: { socket: Duplex; head: Buffer } | null;
  /**
   * The pipeline's last phase when it is not forwarding: a request admitted by every guard is handed
   * here instead of being read and forwarded (the decision service, src/decision/, answers another
   * proxy with it). Unset on the gateway's own requests.
   */
  readonly admit?: Admit | null;
}

/** What an admitted request is handed to in place of forwarding: its principal, grant and route. */
export type Admit = (principal: Principal, grant: Granted | null, route: RouteDef) => void;

/** What the metrics and the access log say of a request; filled in as the pipeline learns it. */
export interface Trace {
  route: string;
  code: string | null;
  organizationId: number | null;
  keyId: number | null;
  /** Set by a limit's refusal: the layer that refused (./refusal.ts). */
  limit?: LimitLayer;
}
