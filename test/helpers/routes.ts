// Routes as config/routes.json writes them, made concrete for a request.

/**
 * The path of a route pattern (`/v2/workspaces/{workspaceId}/accounts/{accountId}`) with each parameter
 * replaced by `value(name)`; `name` is as the pattern writes it (`accountId`, `workspaceId:str`).
 */
export function concretePath(pattern: string, value: (name: string) => string): string {
  return pattern.replace(/\{([A-Za-z]+(?::str)?)\}/g, (_, name: string) => value(name));
}
