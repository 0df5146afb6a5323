// The reference backend of startApp (modes `start` and `backend`). Loaded only where the backend runs:
// the gateway alone never imports the resource handlers.
import type { Logger } from 'pino';
import { bandsFrom } from '../config/bands.js';
import type { BackendServices } from '../backend/services.js';
import { accessChangedVia } from '../access/versions.js';
import { drainable } from '../ops/drain.js';
import { listenOn } from './listen.js';
import type { AppParts, Closer } from './types.js';

export interface StartedBackend {
  services: BackendServices;
  url: string;
  /** In close order: the listener's drain, then the background jobs. */
  closers: Closer[];
}

export async function startBackend(o: AppParts & { port: number }): Promise<StartedBackend> {
  const s = o.app.settings;
  const log: Logger = o.app.log.child({ c: 'backend' });
  // Stored mailbox credentials are brought under the current key before the backend answers anything.
  const { openCredentials } = await import('../backend/credentials/accounts.js');
  const credentials = await openCredentials({
    db: o.db,
    log,
    clock: o.clock,
    keys: s.CREDENTIAL_KEYS,
    dataDir: s.DATA_DIR,
  });
  const services: BackendServices = {
    db: o.db,
    plans: o.tables.plans,
    bands: () => bandsFrom(s.WARMUP_BANDS_FILE),
    scopes: () => o.tables.routes().scopes,
    clock: o.clock,
    log,
    pepper: o.pepper,
    credentials,
    accessChanged: accessChangedVia(o.stores.versions, o.app.log),
    config: {
      gatewaySecret: s.GATEWAY_SECRET,
      internalToken: s.INTERNAL_TOKEN,
      bodyLimitBytes: s.BODY_LIMIT_BYTES,
      acceptUnsignedBody: s.BACKEND_UNSIGNED_BODY === 'accept',
      googleProfileUrl: s.GOOGLE_PROFILE_URL,
      microsoftProfileUrl: s.MICROSOFT_PROFILE_URL,
      googleAdminUrl: s.GOOGLE_ADMIN_URL,
      microsoftGraphUrl: s.MICROSOFT_GRAPH_URL,
      dnsResolver: s.DNS_RESOLVER,
      oauthClientIds: { google: s.GOOGLE_OAUTH_CLIENT_ID, microsoft: s.MICROSOFT_OAUTH_CLIENT_ID },
      oauthRedirectUri: s.OAUTH_REDIRECT_URI,
      auditRetentionDays: s.AUDIT_RETENTION_DAYS,
    },
  };
  const { createBackendServer } = await import('../backend/server.js');
  const { startJobs } = await import('../backend/jobs.js');
  const srv = createBackendServer(services);
  const backendDrain = drainable(srv);
  // In all-in-one the backend is private to the process (docs/decisions.md section 1).
  const url = await listenOn(srv, o.port, o.app.mode === 'start' ? '127.0.0.1' : s.HOST, 'BACKEND_PORT');
  // Drained like the gateway's listener: in the sidecar the backend is the upstream of in-flight requests.
  const closers: Closer[] = [() => backendDrain.drain(o.drainMs())];
  if (o.app.jobs !== false) {
    const stop = startJobs(services);
    closers.push(async () => stop());
  }
  return { services, url, closers };
}
