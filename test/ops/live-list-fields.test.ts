// The node fields of LiveList (src/ops/live-list.ts): an entry removed keeps no reference to its value
// or its neighbours, so a long-lived entry a caller still holds does not keep a finished request (and
// through its neighbours the rest of the list) from V8's young generation. Its representation, not its
// behaviour: in the perf project (vitest.config.ts) beside the other checks of what V8 keeps.
import { describe, expect, it } from 'vitest';
import { LiveList } from '../../src/ops/live-list.js';

describe('LiveList nodes', () => {
  it('an entry removed holds nothing: neither its value nor its neighbours', () => {
    const list = new LiveList<{ n: number }>();
    list.add({ n: 1 });
    const mid = list.add({ n: 2 });
    list.add({ n: 3 });
    list.delete(mid);
    expect(mid).toEqual({ value: undefined, prev: null, next: null });
    const rest = [list.add({ n: 4 }), list.add({ n: 5 })];
    list.take();
    for (const e of rest) expect(e).toEqual({ value: undefined, prev: null, next: null });
  });
});
