// The provider workspaces of the seed file (docs/decisions.md section 2), as if just synchronized.
import { z } from 'zod';
import { seedId as id, seedRows, seedSections } from '../../access/seed.js';

export const seed = seedSections({
  shape: {
    providerWorkspaces: seedRows({
      id,
      organizationId: id,
      workspaceId: id.optional(),
      provider: z.enum(['google', 'microsoft']),
      adminEmail: z.string().email().optional(),
      tenantId: z.string().min(1).optional(),
      status: z.string().default('active'),
    }),
  },
  identityTables: ['provider_workspaces'],
  async apply(_q, seed, step) {
    for (const [i, p] of seed.providerWorkspaces.entries()) {
      await step(
        'providerWorkspaces',
        i,
        `INSERT INTO provider_workspaces (id, organization_id, workspace_id, provider, admin_email, tenant_id, status, last_synced_at)
        VALUES ($1,$2,$3,$4,$5,$6,$7, now()) ON CONFLICT (id) DO UPDATE SET organization_id=$2, workspace_id=$3, provider=$4, admin_email=$5, tenant_id=$6, status=$7`,
        [p.id, p.organizationId, p.workspaceId ?? null, p.provider, p.adminEmail ?? null, p.tenantId ?? null, p.status],
      );
    }
  },
});
