// Which pool a target's request goes to (src/gateway/upstreams/pools.ts): one per origin, and for an
// https target named by host and reached at an address, one per origin and name, since TLS asks for the
// name (test/gateway/https-upstream.test.ts drives it over real TLS).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TargetPools, type PoolTarget } from '../../../src/gateway/upstreams/pools.js';
import { CLIENTS } from './forwarder-kit.js';

it('makes undici pools where the lean client was asked for on a node without its parser', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-no-parser-'));
  try {
    // A node whose `_http_common` cannot be loaded, as a future one might not ship it.
    const preload = join(dir, 'no-parser.cjs');
    writeFileSync(
      preload,
      `const M = require('module'); const load = M._load;
       M._load = function (name, ...rest) { if (name === '_http_common') throw new Error('absent'); return load.call(this, name, ...rest); };`,
    );
    const pools = fileURLToPath(new URL('../../../src/gateway/upstreams/pools.ts', import.meta.url));
    const script = `import { TargetPools } from ${JSON.stringify(pools)};
      const p = new TargetPools({ maxSockets: 2, connectTimeoutMs: 1000, client: 'lean' });
      console.log(p.get({ origin: 'http://127.0.0.1:1' }).constructor.name);
      await p.close();`;
    const run = (flags: string[]) =>
      execFileSync(process.execPath, [...flags, '--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      }).trim();
    expect(run(['--require', preload])).toBe('Pool');
    expect(run([])).toBe('LeanPool');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe.each(CLIENTS)('TargetPools (UPSTREAM_CLIENT=%s)', (client) => {
  let pools: TargetPools;
  afterEach(() => pools.close());

  it('keys a plain target by its origin, and one https address by each name it is reached for', () => {
    pools = new TargetPools({ maxSockets: 8, connectTimeoutMs: 1_000, client }, 4);
    const plain: PoolTarget = { origin: 'http://10.0.0.5:9000', authority: 'svc.internal:9000' };
    const literal: PoolTarget = { origin: 'https://10.0.0.6', authority: '10.0.0.6' };
    const a: PoolTarget = { origin: 'https://10.0.0.7:8443', authority: 'a.example.com:8443' };
    const b: PoolTarget = { origin: 'https://10.0.0.7:8443', authority: 'b.example.com:8443' };
    const unresolved: PoolTarget = { origin: 'https://c.example.com', authority: 'c.example.com' };
    const got = [plain, literal, a, b, unresolved].map((t) => pools.get(t));
    expect(new Set(got).size).toBe(5);
    expect(pools.origins().sort()).toEqual(
      [
        'http://10.0.0.5:9000',
        'https://10.0.0.6',
        'https://10.0.0.7:8443 a.example.com',
        'https://10.0.0.7:8443 b.example.com',
        'https://c.example.com',
      ].sort(),
    );
    // Another object for the same place shares its pool.
    expect(pools.get({ origin: 'https://10.0.0.7:8443', authority: 'a.example.com:8443' })).toBe(got[2]);
  });

  it('retires the pool of a name no longer among the targets', () => {
    pools = new TargetPools({ maxSockets: 8, connectTimeoutMs: 1_000, client }, 2);
    const a: PoolTarget = { origin: 'https://10.0.0.7', authority: 'a.example.com' };
    const b: PoolTarget = { origin: 'https://10.0.0.7', authority: 'b.example.com' };
    pools.get(a);
    pools.get(b);
    pools.follow([a, { origin: 'https://10.0.0.8', authority: 'a.example.com' }]);
    expect(pools.origins()).toEqual(['https://10.0.0.7 a.example.com']);
  });
});
