// The workspace's notifications, read state and cursor pages.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';
import { seed } from './seed.js';

export const notifications: BackendDomain = { name: 'notifications', register, schemas, seed };
export { notify } from './queries.js';
