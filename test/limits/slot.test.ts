// The hash slot of a key, checked against the values Redis gives (CLUSTER KEYSLOT).
import { describe, expect, it } from 'vitest';
import { keySlot } from '../../src/limits/redis-cluster/slot.js';

describe('keySlot', () => {
  it.each([
    ['foo', 12182],
    ['bar', 5061],
    ['123456789', 0x31c3],
    ['é', 10180],
    ['kg:av:{1}', 9842],
    ['kg:rl:{k:1000:read}:60000', 9090],
  ])('%s is in slot %i', (key, slot) => {
    expect(keySlot(key)).toBe(slot);
  });

  it('hashes the first hash tag only when it is not empty', () => {
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('foo{}{bar}')).toBe(8363); // an empty tag: the whole key
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'));
  });
});
