// `npm run openapi`: write config/openapi/v2.json, v1.json and api-keys.json from config/routes.json and the backend's
// schemas. `--check` writes nothing and exits 1 when a checked-in document differs from a fresh one.
// ROUTES_FILE and OPENAPI_DIR are read as the servers read them (defaults: config/routes.json, config/openapi).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateOpenApi, serialize, type Api } from './generate.js';
import { generateApiKeysOpenApi } from './api-keys.js';
import { adminOpenApi } from '../admin-api/openapi.js';

const routesFile = process.env.ROUTES_FILE || 'config/routes.json';
const dir = process.env.OPENAPI_DIR || 'config/openapi';
const check = process.argv.includes('--check');

const raw: unknown = JSON.parse(readFileSync(routesFile, 'utf8'));
let stale = 0;
// api-keys.json: the backend's session-authenticated key management (src/openapi/api-keys.ts); admin.json:
// the admin API (src/admin-api/openapi.ts); beside the two public ones.
for (const api of ['v2', 'v1', 'api-keys', 'admin'] as const) {
  const file = join(dir, `${api}.json`);
  const text = serialize(
    api === 'api-keys' ? generateApiKeysOpenApi() : api === 'admin' ? adminOpenApi() : generateOpenApi(api as Api, raw),
  );
  if (check) {
    let current = '';
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      // missing: stale
    }
    if (current !== text) {
      stale++;
      console.error(`${file} is out of date: run npm run openapi`);
    }
    continue;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
process.exitCode = stale ? 1 : 0;
