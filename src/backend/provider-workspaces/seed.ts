// The provider workspaces of the seed file (docs/decisions.md section 2), as if just synchronized.
import { z } from 'zod';
import { seedId as id, seedRow, seedRows, seedSections } from '../../access/seed.js';
import { upsertSeedProviderWorkspace } from './queries.js';

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
      await upsertSeedProviderWorkspace(seedRow(step, 'providerWorkspaces', i), p);
    }
  },
});
