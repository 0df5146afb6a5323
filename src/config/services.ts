// The services a route may name (the `services` section of ROUTES_FILE): each with its targets and the
// settings that choose among them (balancing, health, retries, timeouts). A route naming none goes to
// the `default` service, which is UPSTREAM_URL (the reference backend in all-in-one) unless the file
// defines it. The gateway's side of a service (pools, health state) is in src/gateway/upstreams/.
import { z } from 'zod';

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
export const DEFAULT_SERVICE = 'default';

const targetUrl = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//.test(u), 'must be an http:// or https:// URL')
  .refine((u) => !/[?#]/.test(u), 'must not carry a query or fragment');

const target = z.union([
  targetUrl,
  z.object({ url: targetUrl, weight: z.number().int().min(1).max(1000).default(1) }).strict(),
]);

const timeouts = z
  .object({
    /** Connecting to a target (TCP, TLS). */
    connectMs: z.number().int().positive().optional(),
    /** From handing the request over to the answer's head. */
    headMs: z.number().int().positive().optional(),
    /** Silence between two chunks of the answer's body. */
    idleMs: z.number().int().positive().optional(),
  })
  .strict();

export const serviceSchema = z
  .object({
    targets: z.array(target).min(1),
    /** least-request: the less loaded of two random healthy targets (Envoy's default); round-robin. */
    balance: z.enum(['least-request', 'round-robin']).default('least-request'),
    /** Host-name targets are resolved again this often, and at once when one fails to connect. */
    dns: z
      .object({ refreshSeconds: z.number().int().min(1).max(3600).default(10) })
      .strict()
      .prefault({}),
    /** Removed from the start of the request's path before the target's own base path is put in front. */
    stripPrefix: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)+$/, 'must be a /-separated path without a trailing /')
      .optional(),
    timeouts: timeouts.prefault({}),
    /**
     * The client's Host field goes to the target (as Envoy does, and as keygate always did); false sends
     * the target URL's own host:port, for a service that is found by its name (a virtual host, a CDN).
     */
    preserveHost: z.boolean().default(true),
    retries: z
      .object({
        /** Tries after the first, on other targets where there are any. */
        attempts: z.number().int().min(0).max(5).default(2),
        /**
         * Retries of sent requests in flight at most this share of the requests in flight (Envoy's retry
         * budget)... Half: one target of three dying under even load leaves a third of the requests in
         * flight to try again at once, which fits; a service failing as a whole gets at most half its
         * traffic again, not a multiple of it.
         */
        budgetPercent: z.number().min(0).max(100).default(50),
        /** ...but always this many. */
        minConcurrent: z.number().int().min(0).max(1000).default(3),
      })
      .strict()
      .prefault({}),
    passive: z
      .object({
        /** Connect failures, resets, timeouts or 5xx answers in a row that eject a target. */
        consecutiveFailures: z.number().int().min(1).max(1000).default(5),
        /** The first ejection's length; each next one in a row is longer (times the ejections so far). */
        baseEjectionMs: z.number().int().min(100).default(30_000),
        maxEjectionMs: z.number().int().min(100).default(300_000),
        /** Never more than this share of a service's targets ejected at once (at least one stays). */
        maxEjectedPercent: z.number().min(0).max(100).default(50),
      })
      .strict()
      .prefault({}),
    /** An active HTTP probe per target; off when absent. */
    probe: z
      .object({
        path: z.string().regex(/^\/[^\s?#]*(\?[^\s#]*)?$/, 'must be an origin-form path'),
        intervalMs: z.number().int().min(100).default(5_000),
        timeoutMs: z.number().int().min(10).default(1_000),
        /** Probes answered 2xx in a row that re-admit a target. */
        healthyThreshold: z.number().int().min(1).default(2),
        /** Probes failed in a row that eject it. */
        unhealthyThreshold: z.number().int().min(1).default(3),
      })
      .strict()
      .optional(),
  })
  .strict();

export const servicesSchema = z.record(z.string(), serviceSchema).superRefine((services, ctx) => {
  for (const name of Object.keys(services))
    if (!NAME.test(name))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'a service name is a-z, 0-9 and - (at most 63), starting with a letter',
      });
});

export type ServiceFile = z.input<typeof serviceSchema>;

export interface ServiceTarget {
  url: string;
  weight: number;
}

/** One service as a route refers to it. A reload makes new objects; an unchanged service is `same()` as before. */
export interface ServiceConfig extends Omit<z.output<typeof serviceSchema>, 'targets'> {
  name: string;
  targets: ServiceTarget[];
  /**
   * The `default` service the file does not define: its one target is the process's upstream
   * (UPSTREAM_URL, or the in-process reference backend in all-in-one), known only when the gateway
   * starts; its `targets` here are empty.
   */
  implicit?: true;
}

/** Per-route settings of its forwarding, within the service's and the global bound. */
export interface RouteForwarding {
  /** A sent request with an idempotent method may be tried again on another target (default true). */
  retry: boolean;
  timeouts: { connectMs?: number; headMs?: number; idleMs?: number };
}

export function serviceConfig(name: string, raw: z.output<typeof serviceSchema>): ServiceConfig {
  return {
    ...raw,
    name,
    targets: raw.targets.map((t) => (typeof t === 'string' ? { url: t, weight: 1 } : { url: t.url, weight: t.weight })),
  };
}

/** The default service when the file does not define it: the upstream's one target, every setting at its default. */
export function implicitDefaultService(): ServiceConfig {
  const { targets, ...settings } = serviceSchema.parse({ targets: ['http://upstream.invalid'] });
  void targets;
  return { ...settings, name: DEFAULT_SERVICE, targets: [], implicit: true };
}

/** The implicit default service with its target now known. */
export function withUpstream(service: ServiceConfig, url: string): ServiceConfig {
  return service.implicit ? { ...service, targets: [{ url, weight: 1 }] } : service;
}

/** Two configurations of one service that a reload may keep running as they are (pools, health). */
export function sameService(a: ServiceConfig, b: ServiceConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A request target less the service's `stripPrefix`: `/v2/x?q` less `/v2` is `/x?q`; the prefix must end
 * at a segment's end (`/v2x` keeps it), and the whole path removed leaves `/`. What the service receives,
 * and what the gateway signs, forwarded or tunnelled alike.
 */
export function stripPrefix(target: string, prefix: string): string {
  if (!target.startsWith(prefix)) return target;
  const next = target.charCodeAt(prefix.length);
  if (Number.isNaN(next)) return '/';
  if (next === 0x2f /* / */) return target.slice(prefix.length);
  if (next === 0x3f /* ? */) return '/' + target.slice(prefix.length);
  return target;
}
