import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import type { Plans } from '../config/plans.js';
import type { Bands } from '../config/bands.js';
import type { MinRole } from '../config/routes.js';
import type { Clock } from '../ops/clock.js';
import type { CredentialCipher } from './credentials/cipher.js';

export interface BackendConfig {
  gatewaySecret: string;
  internalToken: string;
  bodyLimitBytes: number;
  /** BACKEND_UNSIGNED_BODY=accept: a body under a forward-auth decision's signature, which does not cover it. */
  acceptUnsignedBody?: boolean;
  googleProfileUrl: string;
  microsoftProfileUrl: string;
  googleAdminUrl: string;
  microsoftGraphUrl: string;
  /** `host:port` of the DNS server for live lookups; the system resolver when unset. */
  dnsResolver?: string;
  /** The OAuth application behind consent links (`oauth-url`); unset ids make that route 503. */
  oauthClientIds: { google?: string; microsoft?: string };
  oauthRedirectUri?: string;
  /** Audit rows older than this are purged (AUDIT_RETENTION_DAYS). */
  auditRetentionDays?: number;
}

/** What every handler may use; built once at start and handed down, so no module reaches for a global. */
export interface BackendServices {
  db: Db;
  plans: () => Plans;
  /** The automatic reply-rate and thread-tendency bands (WARMUP_BANDS_FILE). */
  bands: () => Bands;
  /** Every known scope and its minimum role (config/routes.json). */
  scopes: () => Record<string, MinRole | null>;
  clock: Clock;
  log: Logger;
  config: BackendConfig;
  /** The pepper of the keyed hash of secrets and session tokens. */
  pepper: string;
  /** Seals and opens the mailbox credentials stored in accounts (src/backend/credentials/). */
  credentials: CredentialCipher;
  /**
   * Call after committing any change to access data (keys, memberships, roles, organization plan,
   * pause, API access, workspace deletion): the next request on every gateway instance sees it.
   */
  accessChanged(orgId: number): Promise<void>;
}
