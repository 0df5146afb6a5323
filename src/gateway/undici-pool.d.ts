// undici's Pool alone (src/gateway/upstream-client.ts), not the package's index, which loads every other
// part of undici too (fetch, WebSocket, the cache, the mock agents). Measured with undici 6.29.1 on
// Node 20 (2026-12-04): `require('undici')` loads 95 of undici's files where these two load 23, and
// costs 5 MB more RSS, 1.7 MB more heap and some 75 ms more to load (137-170 ms against 61-77); the
// gateway process (`keygate gateway`, at /readyz) holds about 10 MB more RSS with the index (median of
// six starts, 129.7 MB against 118.9). test/ops/gateway-modules.test.ts checks the index stays unloaded.
// undici has no `exports` map, so the file is importable; its class is the index's Pool.
declare module 'undici/lib/dispatcher/pool.js' {
  import { Pool } from 'undici';
  export default Pool;
}
// The lower-cased name of a raw header name, from undici's table of known names (src/gateway/response-head.ts).
declare module 'undici/lib/core/util.js' {
  export function headerNameToString(value: string | Buffer): string;
}
