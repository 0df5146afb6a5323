// Secrets of the tests' own keys: a type's prefix and a tag a reader can tell apart, padded to a valid
// secret (32 to 128 characters of [A-Za-z0-9] after the prefix, src/access/secrets.ts).

export type KeyPrefix = 'svc_ws_' | 'svc_pk_' | 'svc_v1_';

/** `prefix` + `tag` padded with zeros to 36 characters: `testSecret('svc_ws_', 'Doomed')`. */
export function testSecret(prefix: KeyPrefix, tag: string): string {
  return prefix + tag.padEnd(36, '0');
}
