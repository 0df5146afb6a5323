// `npm run openapi`: write config/openapi/v2.json, v1.json and api-keys.json from config/routes.json and the backend's
// schemas. `--check` writes nothing and exits 1 when a checked-in document differs from a fresh one.
// ROUTES_FILE and OPENAPI_DIR are read as the servers read them (defaults: config/routes.json, config/openapi).
// `--profile FILE [--out FILE]`: the document of a rest profile's interface (./profile.ts) instead, written to
// --out or to OPENAPI_DIR/<profile name>.json; a mistake in the profile is its one line, exit code 2.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateOpenApi, serialize, type Api } from './generate.js';
import { generateApiKeysOpenApi } from './api-keys.js';
import { generateProfileOpenApi } from './profile.js';
import { adminOpenApi } from '../admin-api/openapi.js';
import { loadProfile } from '../config/profile/load.js';
import { ConfigError } from '../config/errors.js';

const routesFile = process.env.ROUTES_FILE || 'config/routes.json';
const dir = process.env.OPENAPI_DIR || 'config/openapi';

/** Each document to write: its file and its text. */
function workspaceDocuments(): [string, string][] {
  const raw: unknown = JSON.parse(readFileSync(routesFile, 'utf8'));
  // api-keys.json: the backend's session-authenticated key management (src/openapi/api-keys.ts); admin.json:
  // the admin API (src/admin-api/openapi.ts); beside the two public ones.
  return (['v2', 'v1', 'api-keys', 'admin'] as const).map((api) => [
    join(dir, `${api}.json`),
    serialize(
      api === 'api-keys'
        ? generateApiKeysOpenApi()
        : api === 'admin'
          ? adminOpenApi()
          : generateOpenApi(api as Api, raw),
    ),
  ]);
}

function profileDocuments(file: string, out: string | undefined): [string, string][] {
  const profile = loadProfile({
    PROFILE_FILE: file,
    ROUTES_FILE: routesFile,
    PLANS_FILE: process.env.PLANS_FILE || 'config/plans.json',
  });
  const interfaces = profile.interfaces.filter((i) => i.errors.format === 'problem');
  if (interfaces.length === 0)
    throw new ConfigError(
      `--profile ${file}: a workspace profile's documents are config/openapi/v2.json and v1.json; run npm run openapi without --profile`,
    );
  return interfaces.map((iface) => [
    out ?? join(dir, `${iface.id}.json`),
    serialize(generateProfileOpenApi(profile, iface)),
  ]);
}

function main(): number {
  const { values } = parseArgs({
    options: { check: { type: 'boolean' }, profile: { type: 'string' }, out: { type: 'string' } },
    strict: true,
  });
  if (values.out !== undefined && values.profile === undefined) throw new ConfigError('--out goes with --profile');
  const documents = values.profile === undefined ? workspaceDocuments() : profileDocuments(values.profile, values.out);
  let stale = 0;
  for (const [file, text] of documents) {
    if (values.check) {
      let current = '';
      try {
        current = readFileSync(file, 'utf8');
      } catch {
        // missing: stale
      }
      if (current !== text) {
        stale++;
        console.error(
          `${file} is out of date: run npm run openapi${values.profile ? ` -- --profile ${values.profile}` : ''}`,
        );
      }
      continue;
    }
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    console.log(`wrote ${file}`);
  }
  return stale ? 1 : 0;
}

try {
  process.exitCode = main();
} catch (err) {
  // A mistake of the profile or of the arguments: one line, as the programs stop on one (exit code 2).
  if (!(err instanceof ConfigError) && !(err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) throw err;
  console.error(`openapi: ${(err as Error).message}`);
  process.exitCode = 2;
}
