// OAuth mailboxes: consent links, connecting with a provider's tokens, and refreshing them.
import type { BackendDomain } from '../domain.js';
import { jobs } from './jobs.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';

export const oauth: BackendDomain = { name: 'oauth', register, jobs, schemas };
