// config/routes.json and the backend agree: every route the gateway forwards has a handler, and the
// backend serves no /v1 or /v2 route the gateway would never forward.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Router } from '../../src/backend/router.js';
import { registerDomains } from '../../src/backend/domains.js';
import { envelopeFor } from '../../src/backend/server.js';
import type { BackendServices } from '../../src/backend/services.js';
import { bandsFrom } from '../../src/config/bands.js';

const file = JSON.parse(readFileSync('config/routes.json', 'utf8'));
const norm = (p: string) => p.replace(/\{[A-Za-z]+(:str)?\}/g, (m) => (m.endsWith(':str}') ? '{s}' : '{n}'));

describe('routes.json and the backend', () => {
  const router = new Router(envelopeFor);
  // Registration needs no database: a services object with the static parts is enough.
  registerDomains(router, {
    config: {},
    bands: () => bandsFrom('config/warmup-bands.json'),
    pepper: 'routes-coverage',
  } as unknown as BackendServices);
  const served = new Set(
    router
      .routes()
      .filter((r) => / \/v[12]\//.test(r))
      .map((r) => {
        const [m, p] = r.split(' ');
        return `${m} ${norm(p)}`;
      }),
  );
  const forwarded = [...file.v2, ...file.v1]
    .filter((r: { gateway?: boolean }) => !r.gateway)
    .map((r: { method: string; path: string }) => `${r.method} ${norm(r.path)}`);

  it('every forwarded route has a backend handler', () => {
    expect(forwarded.filter((r) => !served.has(r))).toEqual([]);
  });
  it("every public backend route is in the gateway's table", () => {
    const table = new Set(forwarded);
    expect([...served].filter((r) => !table.has(r))).toEqual([]);
  });
});
