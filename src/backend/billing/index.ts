// The organization's plan, capabilities and usage.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';

export const billing: BackendDomain = { name: 'billing', register, schemas };
