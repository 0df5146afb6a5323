// Answers of a pure function remembered by key, up to `max` of them: when full, the memo starts
// afresh (cheaper on the request path than an LRU's bookkeeping, and the keys that matter come back
// at once). Used for the route table's matches and the gateway's per-path and per-address checks.
export class BoundedMemo<K, V> {
  private answers = new Map<K, V>();

  constructor(private readonly max: number) {}

  get(key: K, compute: (key: K) => V): V {
    let v = this.answers.get(key);
    if (v === undefined && !this.answers.has(key)) {
      v = compute(key);
      if (this.answers.size >= this.max) this.answers.clear();
      this.answers.set(key, v);
    }
    return v as V;
  }

  clear(): void {
    this.answers.clear();
  }
}
