// Workspace members, invitations and roles.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';

export const workspace: BackendDomain = { name: 'workspace', register, schemas };
export { workspaceName } from './schemas.js';
