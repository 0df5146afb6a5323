// The one service layer for access changes: who acts, and what every operation is handed. The CLI,
// the backend's /api-keys and /internal routes and the admin API build a ServiceContext once per
// command or request and call the operations of keys.ts, organizations.ts and sessions.ts; they only
// parse input and format output around them.
import type { Db } from '../../db/types.js';
import type { Clock } from '../../ops/clock.js';
import type { Plans } from '../../config/plans.js';
import type { MinRole } from '../../config/routes.js';
import type { KeyProfile } from '../key-types.js';

/** Who makes a change, as the audit trail records it. */
export type Actor =
  | { kind: 'admin-token'; id: string; name: string }
  | { kind: 'user'; id: number }
  /** `name`: what ran as the operator, when not a plain command (`apply state.yaml`). */
  | { kind: 'cli'; osUser: string; name?: string }
  | { kind: 'internal' }
  | { kind: 'seed' }
  /** A /v2 request's API key (a workspace's members changed through the gateway). */
  | { kind: 'api-key'; id: number };

export interface ServiceContext {
  db: Db;
  actor: Actor;
  /** The request that carried the change (X-Request-Id), recorded in the audit row. */
  requestId?: string;
  clock: Clock;
  /** The pepper of the keyed hash of secrets and session tokens (settings.key_hash_pepper). */
  pepper: string;
  /** Every known scope and its minimum role (ROUTES_FILE). */
  scopes(): Record<string, MinRole | null>;
  plans(): Plans;
  /**
   * The profile in force (PROFILE_FILE, docs/profiles.md): the key types a key may be made of and their
   * prefixes. Absent: the workspace API's (workspace, personal, partner).
   */
  profile?(): KeyProfile;
  /**
   * Called after a change to an organization's access data has committed: bumps its access version so
   * every gateway refuses or re-reads on the very next request. Must not throw (a failed bump is
   * logged by the implementation; the database's NOTIFY still evicts).
   */
  accessChanged(orgId: number): Promise<void>;
}

export type ServiceErrorKind = 'invalid' | 'not_found' | 'forbidden' | 'conflict';

/**
 * An operation refused. `kind` picks the status class; `reason` is a stable name an interface may
 * map to its own code (the /api-keys routes map them to 150101-150104); `field` names the input at
 * fault when there is one. The message never holds a secret.
 */
export class ServiceError extends Error {
  override name = 'ServiceError';
  constructor(
    readonly kind: ServiceErrorKind,
    message: string,
    readonly reason?: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The instant of the context's clock. */
export function nowOf(ctx: Pick<ServiceContext, 'clock'>): Date {
  return new Date(ctx.clock.now());
}

/** The actor as the audit trail stores it: a kind and, where there is one, an id and a name. */
export function actorColumns(actor: Actor): { kind: Actor['kind']; id: string | null; name: string | null } {
  switch (actor.kind) {
    case 'admin-token':
      return { kind: actor.kind, id: actor.id, name: actor.name };
    case 'user':
    case 'api-key':
      return { kind: actor.kind, id: String(actor.id), name: null };
    case 'cli':
      return { kind: actor.kind, id: actor.osUser, name: actor.name ?? null };
    default:
      return { kind: actor.kind, id: null, name: null };
  }
}

/** What a program holds once (its services) from which a context per command or request is made. */
export type ServiceBase = Omit<ServiceContext, 'actor' | 'requestId'>;

/** A context for one command or request: the program's services, who acts, and the request's id. */
export function serviceContext(base: ServiceBase, actor: Actor, requestId?: string): ServiceContext {
  return {
    db: base.db,
    clock: base.clock,
    pepper: base.pepper,
    scopes: base.scopes,
    plans: base.plans,
    profile: base.profile,
    accessChanged: base.accessChanged,
    actor,
    requestId,
  };
}
