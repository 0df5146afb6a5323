// The request (and, where the handler's shape is plain, response) schemas of every route of /v1 and
// /v2, by `METHOD path` as config/routes.json writes it, gathered from the domains (domains.ts). The
// handlers parse with these same schemas and the API description (src/openapi/) is generated from them,
// so the two cannot drift.
import type { SchemaRegistry } from './domain.js';
import { DOMAINS } from './domains.js';

export type { OperationSchemas, SchemaRegistry } from './domain.js';

export const SCHEMAS: SchemaRegistry = Object.assign({}, ...DOMAINS.map((domain) => domain.schemas ?? {}));
