// undici's Pool alone (src/gateway/forward.ts): the package's index loads every other part of undici
// too (fetch, WebSocket, the cache, the mock agents): 2 to 5 MB of the gateway's RSS (bench/RESULTS.md, issue 25).
// undici has no `exports` map, so the file is importable; its class is the index's Pool.
declare module 'undici/lib/dispatcher/pool.js' {
  import { Pool } from 'undici';
  export default Pool;
}
// The lower-cased name of a raw header name, from undici's table of known names (src/gateway/forward.ts).
declare module 'undici/lib/core/util.js' {
  export function headerNameToString(value: string | Buffer): string;
}
