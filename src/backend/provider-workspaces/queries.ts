// The SQL of provider workspaces: the registrations of a workspace (/v2) or an organization (/v1), their
// syncs, the accounts a sync imports, and the seed file's registrations. The rules these queries serve are
// in service.ts.
import type { Queryable } from '../../db/index.js';
import type { Provider } from './client.js';

export interface PwRow {
  id: number;
  organization_id: number;
  workspace_id: number | null;
  provider: Provider;
  admin_email: string | null;
  tenant_id: string | null;
  status: string;
  domains: { domain: string; mailboxCount: number }[] | string;
  last_synced_at: Date | null;
  created_at: Date;
}

export interface SyncRow {
  id: number;
  provider_workspace_id: number;
  workspace_id: number;
  status: 'running' | 'completed' | 'failed';
  total: number;
  imported: number;
  skipped: number;
  error: string | null;
  started_at: Date;
  finished_at: Date | null;
}

const COLS = `id, organization_id, workspace_id, provider, admin_email, tenant_id, status, domains, last_synced_at, created_at`;

/** The organization of a live workspace, or null. */
export async function organizationOfWorkspace(db: Queryable, workspaceId: number): Promise<number | null> {
  const rows = await db.query(`SELECT organization_id FROM workspaces WHERE id = $1 AND deleted_at IS NULL`, [
    workspaceId,
  ]);
  return rows[0]?.organization_id ?? null;
}

/** Which workspace an organization-level (/v1) registration imports into. */
export async function defaultWorkspace(db: Queryable, organizationId: number): Promise<number | null> {
  const rows = await db.query(
    `SELECT id FROM workspaces WHERE organization_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT 1`,
    [organizationId],
  );
  return rows[0]?.id ?? null;
}

export async function workspaceIsLive(db: Queryable, workspaceId: number): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM workspaces WHERE id = $1 AND deleted_at IS NULL`, [workspaceId]);
  return rows.length > 0;
}

export async function organizationPlan(db: Queryable, organizationId: number): Promise<string | null> {
  const [org] = await db.query(`SELECT plan FROM organizations WHERE id = $1`, [organizationId]);
  return (org?.plan ?? null) as string | null;
}

export async function listProviderWorkspaces(
  db: Queryable,
  filter: { workspaceId?: number; organizationId?: number },
): Promise<PwRow[]> {
  if (filter.workspaceId !== undefined) {
    return db.query<PwRow>(`SELECT ${COLS} FROM provider_workspaces WHERE workspace_id = $1 ORDER BY id`, [
      filter.workspaceId,
    ]);
  }
  return db.query<PwRow>(`SELECT ${COLS} FROM provider_workspaces WHERE organization_id = $1 ORDER BY id`, [
    filter.organizationId,
  ]);
}

/** One registration within a workspace (/v2) or an organization (/v1), or undefined. */
export async function findProviderWorkspace(
  db: Queryable,
  id: number,
  scope: { workspaceId?: number; organizationId?: number },
): Promise<PwRow | undefined> {
  const rows =
    scope.workspaceId !== undefined
      ? await db.query<PwRow>(`SELECT ${COLS} FROM provider_workspaces WHERE id = $1 AND workspace_id = $2`, [
          id,
          scope.workspaceId,
        ])
      : await db.query<PwRow>(`SELECT ${COLS} FROM provider_workspaces WHERE id = $1 AND organization_id = $2`, [
          id,
          scope.organizationId,
        ]);
  return rows[0];
}

/** The registration locked for the rest of the transaction, or undefined. */
export async function lockProviderWorkspace(db: Queryable, id: number): Promise<PwRow | undefined> {
  const [row] = await db.query<PwRow>(`SELECT ${COLS} FROM provider_workspaces WHERE id = $1 FOR UPDATE`, [id]);
  return row;
}

/** The id of the organization's registration of this tenant (`key`: lower-cased tenant id or admin address), or null. */
export async function findRegisteredTenant(
  db: Queryable,
  organizationId: number,
  provider: Provider,
  key: string | null,
): Promise<number | null> {
  const rows = await db.query(
    `SELECT id FROM provider_workspaces WHERE organization_id = $1 AND provider = $2 AND lower(coalesce(tenant_id, admin_email)) = $3`,
    [organizationId, provider, key],
  );
  return rows[0]?.id ?? null;
}

export interface NewProviderWorkspace {
  organizationId: number;
  workspaceId: number | null;
  provider: Provider;
  adminEmail: string | null;
  tenantId: string | null;
  domainsJson: string;
}

/** The new registration, or null when an identical one won a race. */
export async function insertProviderWorkspace(db: Queryable, input: NewProviderWorkspace): Promise<PwRow | null> {
  const rows = await db.query<PwRow>(
    `INSERT INTO provider_workspaces (organization_id, workspace_id, provider, admin_email, tenant_id, status, domains)
     VALUES ($1, $2, $3, $4, $5, 'created', $6::jsonb)
     ON CONFLICT DO NOTHING RETURNING ${COLS}`,
    [input.organizationId, input.workspaceId, input.provider, input.adminEmail, input.tenantId, input.domainsJson],
  );
  return rows[0] ?? null;
}

/** Delete a registration; its imported accounts stay, no longer linked to it. Call inside a transaction. */
export async function deleteProviderWorkspace(tx: Queryable, id: number): Promise<void> {
  await tx.query(`UPDATE accounts SET provider_workspace_id = NULL WHERE provider_workspace_id = $1`, [id]);
  await tx.query(`DELETE FROM provider_workspaces WHERE id = $1`, [id]);
}

export async function setProviderWorkspaceDomains(db: Queryable, id: number, domainsJson: string): Promise<void> {
  await db.query(`UPDATE provider_workspaces SET domains = $2::jsonb WHERE id = $1`, [id, domainsJson]);
}

export async function setProviderWorkspaceTarget(db: Queryable, id: number, workspaceId: number): Promise<void> {
  await db.query(`UPDATE provider_workspaces SET workspace_id = $2 WHERE id = $1`, [id, workspaceId]);
}

export async function markProviderWorkspaceError(db: Queryable, id: number): Promise<void> {
  await db.query(`UPDATE provider_workspaces SET status = 'error' WHERE id = $1`, [id]);
}

export async function markProviderWorkspaceSynced(
  db: Queryable,
  id: number,
  finishedIso: string,
  domainsJson: string,
): Promise<void> {
  await db.query(
    `UPDATE provider_workspaces SET status = 'active', last_synced_at = $2::timestamptz, domains = $3::jsonb WHERE id = $1`,
    [id, finishedIso, domainsJson],
  );
}

/** Which of these (lower-cased) addresses are connected as accounts in any workspace. */
export async function connectedEmails(db: Queryable, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows = await db.query<{ e: string }>(
    `SELECT lower(email_address) AS e FROM accounts WHERE lower(email_address) = ANY($1::text[])`,
    [emails],
  );
  return new Set(rows.map((r) => r.e));
}

export async function latestSyncRow(db: Queryable, providerWorkspaceId: number): Promise<SyncRow | undefined> {
  const rows = await db.query<SyncRow>(
    `SELECT * FROM provider_workspace_syncs WHERE provider_workspace_id = $1 ORDER BY id DESC LIMIT 1`,
    [providerWorkspaceId],
  );
  return rows[0];
}

/** The id of a `running` sync of the tenant started after `startedAfterIso`, or null. */
export async function findRunningSync(
  db: Queryable,
  providerWorkspaceId: number,
  startedAfterIso: string,
): Promise<number | null> {
  const rows = await db.query(
    `SELECT id FROM provider_workspace_syncs WHERE provider_workspace_id = $1 AND status = 'running' AND started_at > $2::timestamptz`,
    [providerWorkspaceId, startedAfterIso],
  );
  return rows[0]?.id ?? null;
}

/** Every still `running` sync of the tenant failed as `interrupted`. */
export async function interruptRunningSyncs(db: Queryable, providerWorkspaceId: number, nowIso: string): Promise<void> {
  await db.query(
    `UPDATE provider_workspace_syncs SET status = 'failed', error = 'interrupted', finished_at = $2::timestamptz
      WHERE provider_workspace_id = $1 AND status = 'running'`,
    [providerWorkspaceId, nowIso],
  );
}

export async function insertRunningSync(
  db: Queryable,
  providerWorkspaceId: number,
  workspaceId: number | null,
  nowIso: string,
): Promise<SyncRow> {
  const [syncRow] = await db.query<SyncRow>(
    `INSERT INTO provider_workspace_syncs (provider_workspace_id, workspace_id, status, started_at) VALUES ($1, $2, 'running', $3::timestamptz) RETURNING *`,
    [providerWorkspaceId, workspaceId, nowIso],
  );
  return syncRow;
}

export async function failSync(db: Queryable, syncId: number, error: string, finishedIso: string): Promise<void> {
  await db.query(
    `UPDATE provider_workspace_syncs SET status = 'failed', error = $2, finished_at = $3::timestamptz WHERE id = $1`,
    [syncId, error, finishedIso],
  );
}

export async function completeSync(
  db: Queryable,
  syncId: number,
  total: number,
  imported: number,
  finishedIso: string,
): Promise<SyncRow> {
  const [sync] = await db.query<SyncRow>(
    `UPDATE provider_workspace_syncs SET status = 'completed', total = $2, imported = $3, skipped = $4, finished_at = $5::timestamptz
      WHERE id = $1 RETURNING *`,
    [syncId, total, imported, total - imported, finishedIso],
  );
  return sync;
}

export interface ImportedMailboxes {
  workspaceId: number;
  provider: Provider;
  maxLimit: number;
  providerWorkspaceId: number;
  connectedAtIso: string;
  mailboxes: { email: string; displayName: string }[];
}

/** Insert the mailboxes as connected, not warming, accounts; an address already connected anywhere is skipped. Returns how many were inserted. */
export async function importMailboxAccounts(db: Queryable, input: ImportedMailboxes): Promise<number> {
  const inserted = await db.query(
    `INSERT INTO accounts (workspace_id, email_address, from_name, provider, status, verification, warmup_max_limit,
                           provider_workspace_id, last_connected_at)
     SELECT $1, m.email, m.name, $2, 'active', 'pending', $3, $4, $5::timestamptz
       FROM unnest($6::text[], $7::text[]) AS m(email, name)
     ON CONFLICT DO NOTHING RETURNING id`,
    [
      input.workspaceId,
      input.provider,
      input.maxLimit,
      input.providerWorkspaceId,
      input.connectedAtIso,
      input.mailboxes.map((m) => m.email),
      input.mailboxes.map((m) => m.displayName),
    ],
  );
  return inserted.length;
}

/** A provider workspace of the seed file. */
export interface SeedProviderWorkspace {
  id: number;
  organizationId: number;
  workspaceId?: number;
  provider: Provider;
  adminEmail?: string;
  tenantId?: string;
  status: string;
}

/** Writes the seed's provider workspace under its id, over any row of that id, as if just synchronized. */
export async function upsertSeedProviderWorkspace(db: Queryable, registration: SeedProviderWorkspace): Promise<void> {
  await db.query(
    `INSERT INTO provider_workspaces (id, organization_id, workspace_id, provider, admin_email, tenant_id, status, last_synced_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7, now()) ON CONFLICT (id) DO UPDATE SET organization_id=$2, workspace_id=$3, provider=$4, admin_email=$5, tenant_id=$6, status=$7`,
    [
      registration.id,
      registration.organizationId,
      registration.workspaceId ?? null,
      registration.provider,
      registration.adminEmail ?? null,
      registration.tenantId ?? null,
      registration.status,
    ],
  );
}
