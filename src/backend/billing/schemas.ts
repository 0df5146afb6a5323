// The billing reads take no input; their routes are listed for the API description (src/openapi/).
import type { SchemaRegistry } from '../domain.js';

const WS = '/v2/workspaces/{workspaceId}';

export const schemas: SchemaRegistry = {
  [`GET ${WS}/billing/plan`]: {},
  [`GET ${WS}/billing/usage`]: {},
  [`GET ${WS}/billing/capabilities`]: {},
};
