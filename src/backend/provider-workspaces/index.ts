// Provider workspaces (Google Workspace, Microsoft 365) registered for /v1 provisioning.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';
import { seed } from './seed.js';

export const providerWorkspaces: BackendDomain = { name: 'provider-workspaces', register, schemas, seed };
