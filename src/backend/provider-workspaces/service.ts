// Provider workspaces: registered Google-family / Microsoft-family tenants, the preview of their
// mailboxes not yet connected, and the bulk import ("sync") of those mailboxes as accounts. The /v2
// routes (one workspace) and the /v1 routes (a partner key sees its whole organization) call the same
// functions here; only the lookup scope and the error shape differ.
//
// Decisions (the spec leaves them open):
// - Status: `created` on registration, `active` once a sync completed, `error` after a sync failed on
//   the provider's side (a later successful sync makes it `active` again).
// - A tenant is registered once per organization (admin address for google, tenant id for
//   microsoft): a second registration is 409 conflict.
// - Registration lists the tenant's mailboxes once: that call is the delegation / consent check, and
//   it fills `domains`. Missing delegation or consent, an unknown admin or tenant, refused
//   credentials, or a malformed admin address or tenant id: 422, nothing created. Provider
//   unreachable: 502, nothing created.
// - Preview whose provider call shows the credentials no longer work (401, 403 or 404 from the
//   provider): the registration is deleted so it can be registered again (v1 spec, States), 422.
// - "Connected" means an account with that address exists in any workspace: a mailbox belongs to
//   exactly one workspace (spec), so such a mailbox could not be imported. Preview lists the others;
//   `connectedCount` counts the tenant's connected ones; `domains` counts the listed new mailboxes per
//   domain after `search` but before the `domain` filter (facet counts).
// - Sync runs inside the request: POST answers once the import finished, with the sync record
//   (status `completed`, or 422/502 after recording a `failed` sync). A mailbox already connected
//   anywhere is skipped (a mailbox belongs to exactly one workspace). GET reads the newest sync.
// - Where mailboxes are imported: a /v2 registration into its path workspace; a /v1 registration
//   (organization-level) into the organization's first live workspace (lowest id, not soft-deleted),
//   chosen at registration and re-chosen at sync time if that workspace was deleted since.
import type { Queryable } from '../../db/index.js';
import type { Plans } from '../../config/plans.js';
import type { Clock } from '../../ops/clock.js';
import { planOf } from '../../config/plans.js';
import { ApiError } from '../../http/errors.js';
import { notify } from '../notifications/index.js';
import { ProviderError, type ProviderClient, type Mailbox, type Provider } from './client.js';
import {
  completeSync,
  connectedEmails,
  defaultWorkspace,
  deleteProviderWorkspace,
  failSync,
  findProviderWorkspace,
  findRegisteredTenant,
  findRunningSync,
  importMailboxAccounts,
  insertProviderWorkspace,
  insertRunningSync,
  interruptRunningSyncs,
  latestSyncRow,
  listProviderWorkspaces,
  lockProviderWorkspace,
  markProviderWorkspaceError,
  markProviderWorkspaceSynced,
  organizationPlan,
  setProviderWorkspaceDomains,
  setProviderWorkspaceTarget,
  workspaceIsLive,
  type PwRow,
  type SyncRow,
} from './queries.js';
import { isoOrNull } from '../../db/time.js';

// The routes import these from here, with the rest of the domain's service.
export { defaultWorkspace, organizationOfWorkspace, type PwRow, type SyncRow } from './queries.js';

/** The Provider workspace resource of the spec (plus workspaceId, where its mailboxes are imported). */
export function toRecord(row: PwRow) {
  const domains = typeof row.domains === 'string' ? JSON.parse(row.domains) : row.domains;
  return {
    id: row.id,
    provider: row.provider,
    adminEmail: row.admin_email,
    tenantId: row.tenant_id,
    status: row.status,
    workspaceId: row.workspace_id,
    lastSyncedAt: isoOrNull(row.last_synced_at),
    domains: domains as { domain: string; mailboxCount: number }[],
    createdAt: isoOrNull(row.created_at)!,
  };
}

export function toSync(sync: SyncRow) {
  return {
    id: sync.id,
    providerWorkspaceId: sync.provider_workspace_id,
    workspaceId: sync.workspace_id,
    status: sync.status,
    total: sync.total,
    imported: sync.imported,
    skipped: sync.skipped,
    error: sync.error,
    startedAt: isoOrNull(sync.started_at),
    finishedAt: isoOrNull(sync.finished_at),
  };
}

/** What GET .../sync answers before any sync was started. */
export function notStarted(pw: PwRow) {
  return {
    id: null,
    providerWorkspaceId: pw.id,
    workspaceId: pw.workspace_id,
    status: 'not_started',
    total: 0,
    imported: 0,
    skipped: 0,
    error: null,
    startedAt: null,
    finishedAt: null,
  };
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

function domainsOf(mailboxes: Mailbox[]) {
  const countByDomain = new Map<string, number>();
  for (const mailbox of mailboxes) countByDomain.set(mailbox.domain, (countByDomain.get(mailbox.domain) ?? 0) + 1);
  return [...countByDomain.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([domain, mailboxCount]) => ({ domain, mailboxCount }));
}

function providerFailure(err: unknown, pw: { provider: Provider }): ApiError {
  if (!(err instanceof ProviderError)) throw err;
  if (err.failure === 'unavailable')
    return new ApiError('bad_gateway', `The provider could not be used: ${err.message}.`, {
      reason: 'provider_unavailable',
    });
  const reason =
    err.failure === 'not_authorized'
      ? pw.provider === 'google'
        ? 'delegation_missing'
        : 'consent_missing'
      : err.failure === 'unknown_tenant'
        ? pw.provider === 'google'
          ? 'invalid_admin_email'
          : 'invalid_tenant_id'
        : 'credentials_failed';
  return new ApiError('unprocessable_entity', `The tenant cannot be used: ${err.message}.`, { reason });
}

export interface RegisterInput {
  provider: Provider;
  adminEmail?: string | null;
  tenantId?: string | null;
}

export class ProviderWorkspaces {
  constructor(
    private db: Queryable & { tx<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> },
    private client: ProviderClient,
    private plans: () => Plans,
  ) {}

  async list(filter: { workspaceId?: number; organizationId?: number }): Promise<PwRow[]> {
    return listProviderWorkspaces(this.db, filter);
  }

  /** One registration, scoped to a workspace (/v2) or an organization (/v1); 404 otherwise. */
  async get(id: number, scope: { workspaceId?: number; organizationId?: number }): Promise<PwRow> {
    const row = await findProviderWorkspace(this.db, id, scope);
    if (!row) throw new ApiError('not_found', `No provider workspace ${id}.`);
    return row;
  }

  /** Register a tenant after checking with the provider that delegation / consent is in place. */
  async register(input: RegisterInput, target: { organizationId: number; workspaceId: number | null }): Promise<PwRow> {
    const provider = input.provider;
    let adminEmail: string | null = null;
    let tenantId: string | null = null;
    if (provider === 'google') {
      adminEmail = (input.adminEmail ?? '').trim().toLowerCase();
      if (!EMAIL.test(adminEmail))
        throw new ApiError('unprocessable_entity', 'adminEmail is not a valid email address.', {
          field: 'adminEmail',
          reason: 'invalid_admin_email',
        });
    } else {
      tenantId = (input.tenantId ?? '').trim().toLowerCase();
      if (!GUID.test(tenantId) && !DOMAIN.test(tenantId)) {
        throw new ApiError('unprocessable_entity', 'tenantId must be a tenant GUID or a verified domain name.', {
          field: 'tenantId',
          reason: 'invalid_tenant_id',
        });
      }
    }
    const key = tenantId ?? adminEmail;
    const existingId = await findRegisteredTenant(this.db, target.organizationId, provider, key);
    if (existingId !== null)
      throw new ApiError('conflict', 'This tenant is already registered.', { providerWorkspaceId: existingId });
    let mailboxes: Mailbox[];
    try {
      mailboxes = await this.client.listMailboxes({ provider, adminEmail, tenantId });
    } catch (err) {
      throw providerFailure(err, { provider });
    }
    const row = await insertProviderWorkspace(this.db, {
      organizationId: target.organizationId,
      workspaceId: target.workspaceId,
      provider,
      adminEmail,
      tenantId,
      domainsJson: JSON.stringify(domainsOf(mailboxes)),
    });
    // Lost a race with an identical registration.
    if (!row) throw new ApiError('conflict', 'This tenant is already registered.');
    return row;
  }

  /** The tenant's mailboxes, or the registration deleted (and 422) when its credentials fail. */
  private async mailboxesOrForget(pw: PwRow): Promise<Mailbox[]> {
    try {
      return await this.client.listMailboxes({
        provider: pw.provider,
        adminEmail: pw.admin_email,
        tenantId: pw.tenant_id,
      });
    } catch (err) {
      const failure = providerFailure(err, pw);
      if (failure.code === 'unprocessable_entity') {
        await this.db.tx((tx) => deleteProviderWorkspace(tx, pw.id));
        failure.details.registrationDeleted = true;
        failure.message = `${failure.message} The registration was deleted; register the tenant again once this is fixed.`;
      }
      throw failure;
    }
  }

  /** Mailboxes of the tenant not yet connected as accounts, filtered and paged. */
  async preview(pw: PwRow, filters: { search?: string; domains?: string[]; page: number; limit: number }) {
    const mailboxes = await this.mailboxesOrForget(pw);
    await setProviderWorkspaceDomains(this.db, pw.id, JSON.stringify(domainsOf(mailboxes)));
    const connected = await connectedEmails(
      this.db,
      mailboxes.map((m) => m.email),
    );
    const fresh = mailboxes.filter((m) => !connected.has(m.email));
    const needle = filters.search?.trim().toLowerCase();
    const searched = needle
      ? fresh.filter((m) => m.email.includes(needle) || m.displayName.toLowerCase().includes(needle))
      : fresh;
    const facet = new Map<string, number>();
    for (const mailbox of searched) facet.set(mailbox.domain, (facet.get(mailbox.domain) ?? 0) + 1);
    const wanted = filters.domains?.length ? new Set(filters.domains.map((d) => d.toLowerCase())) : null;
    const filtered = wanted ? searched.filter((m) => wanted.has(m.domain)) : searched;
    const start = (filters.page - 1) * filters.limit;
    return {
      newEmails: filtered
        .slice(start, start + filters.limit)
        .map((m) => ({ email: m.email, displayName: m.displayName, domain: m.domain })),
      total: filtered.length,
      page: filters.page,
      limit: filters.limit,
      connectedCount: connected.size,
      domains: [...facet.entries()]
        .sort((a, b) => (a[0] < b[0] ? -1 : 1))
        .map(([domain, count]) => ({ domain, count })),
    };
  }

  async latestSync(pw: PwRow) {
    const latest = await latestSyncRow(this.db, pw.id);
    return latest ? toSync(latest) : notStarted(pw);
  }

  /**
   * Import every mailbox of the tenant not yet connected into the target workspace. `pinned`: the
   * /v2 path workspace; null for /v1 (the registration's workspace, or the organization's first live
   * one when it has none or it was deleted).
   */
  async sync(pw: PwRow, pinned: number | null, clock: Clock) {
    const nowMs = clock.now();
    const now = new Date(nowMs);
    const staleBefore = new Date(nowMs - 10 * 60_000).toISOString();
    const start = await this.db.tx(async (tx) => {
      const row = await lockProviderWorkspace(tx, pw.id);
      if (!row) throw new ApiError('not_found', `No provider workspace ${pw.id}.`);
      let target = pinned ?? row.workspace_id;
      if (pinned === null) {
        const live = target !== null && (await workspaceIsLive(tx, target));
        if (!live) target = await defaultWorkspace(tx, row.organization_id);
        if (target === null)
          throw new ApiError('conflict', 'The organization has no workspace to import mailboxes into.');
        if (target !== row.workspace_id) await setProviderWorkspaceTarget(tx, row.id, target);
      }
      // One sync at a time per tenant; a `running` one older than 10 minutes died with its process.
      const runningId = await findRunningSync(tx, row.id, staleBefore);
      if (runningId !== null)
        throw new ApiError('conflict', 'A sync of this tenant is already running.', { syncId: runningId });
      await interruptRunningSyncs(tx, row.id, now.toISOString());
      const syncRow = await insertRunningSync(tx, row.id, target, now.toISOString());
      return { row, sync: syncRow, target: target!, plan: await organizationPlan(tx, row.organization_id) };
    });

    let mailboxes: Mailbox[];
    try {
      mailboxes = await this.client.listMailboxes({
        provider: start.row.provider,
        adminEmail: start.row.admin_email,
        tenantId: start.row.tenant_id,
      });
    } catch (err) {
      const failure = providerFailure(err, start.row);
      const finished = new Date(clock.now()).toISOString();
      await this.db.tx(async (tx) => {
        await failSync(tx, start.sync.id, String(failure.details.reason ?? failure.code), finished);
        if (failure.code === 'unprocessable_entity') await markProviderWorkspaceError(tx, start.row.id);
      });
      failure.details.syncId = start.sync.id;
      throw failure;
    }

    // A new mailbox starts connected, not warming, with the default daily max capped by the plan.
    const cap = planOf(this.plans(), start.plan).plan.maxWarmupPerAccount;
    const maxLimit = cap === null ? 40 : Math.min(40, cap);
    const finished = new Date(clock.now()).toISOString();
    const done = await this.db.tx(async (tx) => {
      const imported = await importMailboxAccounts(tx, {
        workspaceId: start.target,
        provider: start.row.provider,
        maxLimit,
        providerWorkspaceId: start.row.id,
        connectedAtIso: now.toISOString(),
        mailboxes,
      });
      const sync = await completeSync(tx, start.sync.id, mailboxes.length, imported, finished);
      await markProviderWorkspaceSynced(tx, start.row.id, finished, JSON.stringify(domainsOf(mailboxes)));
      const tenant = start.row.tenant_id ?? start.row.admin_email;
      await notify(
        tx,
        {
          workspaceId: start.target,
          type: 'provider_sync',
          severity: 'info',
          category: 'accounts',
          title: 'Mailbox import finished',
          body: `Imported ${imported} of ${mailboxes.length} mailboxes from ${start.row.provider} tenant ${tenant}; ${mailboxes.length - imported} were already connected.`,
        },
        new Date(finished),
      );
      return sync;
    });
    return toSync(done);
  }
}
