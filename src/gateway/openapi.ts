// The API descriptions (config/openapi/v2.json and v1.json, written by `npm run openapi`), served at
// GET /v2/openapi.json and GET /v1/openapi.json without a key and spending nothing: a client needs the
// document before it holds a key. Each file is read once, on first request, and kept as bytes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DEFAULT_OPENAPI_DIR = 'config/openapi';

const DOCUMENTS: Record<string, string> = { '/v2/openapi.json': 'v2.json', '/v1/openapi.json': 'v1.json' };
const loaded = new Map<string, Buffer | null>();

/**
 * The bytes of the document served at `path` (a request path without its query), or null when `path`
 * is not a document's or its file cannot be read (the caller then routes the request as any other).
 * `dir` is the setting OPENAPI_DIR.
 */
export function openApiRoute(path: string, dir: string = DEFAULT_OPENAPI_DIR): Buffer | null {
  // Every GET asks: a plain suffix test answers nearly all of them without a property lookup by path.
  if (!path.endsWith('/openapi.json')) return null;
  const name = DOCUMENTS[path];
  if (!name) return null;
  const file = join(dir, name);
  let bytes = loaded.get(file);
  if (bytes === undefined) {
    try {
      bytes = readFileSync(file);
    } catch {
      bytes = null;
    }
    loaded.set(file, bytes);
  }
  return bytes;
}
