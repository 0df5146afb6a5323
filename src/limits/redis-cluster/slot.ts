// The Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag, modulo 16384
// (https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#key-distribution-model).
// The breaker judges a Cluster per node (./resilient/nodes.ts) and needs the node of each call's keys
// before sending it; ioredis computes the same slot internally but does not export it.

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let crc = n << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[n] = crc & 0xffff;
  }
  return table;
})();

export const SLOTS = 16384;

/** The slot of a key: of the part between the first `{` and the next `}` when that part is not empty. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key, 'utf8')) crc = ((crc << 8) ^ TABLE[((crc >> 8) ^ byte) & 0xff]) & 0xffff;
  return crc % SLOTS;
}
