// Mailbox provisioning on a provider workspace and its quotas.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';

export const provisioning: BackendDomain = { name: 'provisioning', register, schemas };
export { readOrgBudget, quotasView } from './quotas.js';
