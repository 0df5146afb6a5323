import { describe, expect, it } from 'vitest';
import { LiveList } from '../../src/ops/live-list.js';

describe('LiveList', () => {
  it('holds what was added until it is deleted, and says when an entry was gone already', () => {
    const list = new LiveList<{ n: number }>();
    const [a, b, c] = [1, 2, 3].map((n) => list.add({ n }));
    expect(list.size).toBe(3);
    expect(list.values().map((v) => v.n)).toEqual([3, 2, 1]);
    expect(list.delete(b)).toBe(true);
    expect(list.delete(b)).toBe(false);
    expect(list.values().map((v) => v.n)).toEqual([3, 1]);
    expect(list.delete(c)).toBe(true); // the newest
    expect(list.delete(a)).toBe(true); // the last
    expect(list.size).toBe(0);
    expect(list.values()).toEqual([]);
    list.add({ n: 4 });
    expect(list.values().map((v) => v.n)).toEqual([4]);
  });

  it('take empties it: entries taken are gone for delete, and later adds start afresh', () => {
    const list = new LiveList<{ n: number }>();
    const entries = [1, 2, 3].map((n) => list.add({ n }));
    expect(list.take().map((v) => v.n)).toEqual([3, 2, 1]);
    expect(list.size).toBe(0);
    for (const e of entries) expect(list.delete(e)).toBe(false);
    const d = list.add({ n: 5 });
    expect(list.size).toBe(1);
    expect(list.delete(d)).toBe(true);
    expect(list.size).toBe(0);
  });

  it('values() is a copy: deleting while walking it misses nothing', () => {
    const list = new LiveList<{ n: number }>();
    const entries = new Map([1, 2, 3, 4].map((n) => [n, list.add({ n })]));
    const seen: number[] = [];
    for (const v of list.values()) {
      seen.push(v.n);
      list.delete(entries.get(v.n)!);
    }
    expect(seen).toEqual([4, 3, 2, 1]);
    expect(list.size).toBe(0);
  });
});
