// What a profile is once read and checked (./load.ts): the access contract of one API, as the gateway,
// the CLI, the admin API and the OpenAPI generator use it. The file format is docs/profiles.md; the
// workspace API's own profile is profiles/workspace.yaml, the default.
import type { Plans } from '../plans.js';
import type { Routes } from '../routes.js';
import type { RefusalName } from './refusals.js';

/** A key type of an interface: its name (stored with the key) and the prefix its secrets start with. */
export interface KeyTypeDef {
  name: string;
  prefix: string;
}

/** How a key is presented: `Authorization: Bearer <key>`, or the key alone in a named field. */
export interface KeyPresentation {
  /** The field's name, lower case (`authorization`, `x-api-key`). */
  header: string;
  /** True for `authorization`: the value is `Bearer <key>`. */
  bearer: boolean;
}

/** The two families of rate-limit fields an answer may carry (docs/profiles.md, `limits.headers`). */
export interface HeaderFamilies {
  /** X-RateLimit-Limit, -Remaining, -Reset (and -IP-Limit, -IP-Remaining with an address layer). */
  xRateLimit: boolean;
  /** RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers). */
  ietf: boolean;
}

/** One refusal of a problem-details profile: what RFC 9457's answer says. */
export interface ProblemAnswer {
  status: number;
  /** The refusal's code, unique in the profile; the `code` member of the answer and the end of its type. */
  code: string;
  /** An absolute URI (RFC 9457 section 3.1.1). */
  type: string;
  title: string;
}

/**
 * How the pipeline's phases behave for an interface:
 * - `workspace-v2`: organization, workspaces, roles capping scopes (the workspace API's /v2);
 * - `workspace-v1`: the partner interface (/v1): one layer per key, no scopes;
 * - `consumer`: a flat consumer (an organization without workspaces) with plans, scopes per route.
 */
export type InterfaceModel = 'workspace-v2' | 'workspace-v1' | 'consumer';

export interface InterfaceSpec {
  /** `v2`, `v1`, or a profile's name: the label of its metrics, access lines and usage. */
  id: string;
  /** Every route of the interface starts with it (`/v2`, `/api`). */
  prefix: string;
  model: InterfaceModel;
  key: KeyPresentation;
  keyTypes: KeyTypeDef[];
  /** Requests per minute per client address, across keys; null: no address layer. */
  addressLimit: number | null;
  /** A single per-key limit per minute in place of the plan's buckets (/v1: 20); null: the plan's buckets. */
  keyLimit: number | null;
  headers: HeaderFamilies;
  /**
   * The answers' envelope: `workspace` (Envelope A and B of /v2), `v1` (the partner shape), or `problem`
   * (RFC 9457 problem details, `problems` giving each refusal).
   */
  errors: { format: 'workspace' | 'v1' } | { format: 'problem'; problems: Record<RefusalName, ProblemAnswer> };
  /** What the upstream is told of the caller: the signed identity (docs/identity.md), or nothing. */
  identity: 'keygate' | 'none';
}

export interface Profile {
  /** The profile's name (`workspace`, `shop`). */
  name: string;
  /** `workspace`: the built-in workspace API (its backend, /v1 and /v2); `rest`: any API of consumers. */
  kind: 'workspace' | 'rest';
  /** The file it was read from (the error lines and reloads name it). */
  file: string;
  /** The interfaces, in the order their prefixes are tried. */
  interfaces: InterfaceSpec[];
  /** The route table of each interface (`routes.tables[id]`), the scopes and the services. */
  routes: Routes;
  plans: Plans;
}
