// The workspace's tags and their assignment to accounts.
import type { BackendDomain } from '../domain.js';
import { register } from './routes.js';
import { schemas } from './schemas.js';
import { seed } from './seed.js';

export const tags: BackendDomain = { name: 'tags', register, schemas, seed };
export { assertTagsExist } from './rules.js';
export { replaceAccountTags } from './queries.js';
