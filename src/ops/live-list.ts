// The things in progress (requests in flight, calls waiting on Redis), for the few moments they must
// be found all together: a drain, an outage. A doubly linked list, not a Set.
//
// A Set with one add and one delete per request made every finished request outlive V8's young
// collection: 4.9 KB promoted to the old generation per request, where the bare proxy promotes none
// (test/gateway/young-garbage.test.ts; bench/RESULTS.md, which shows the bisection). The likely
// mechanism, from V8's ordered-hash-table.h: the table behind a Set is replaced each time its deleted
// entries fill it, and the table replaced keeps a link to its successor for iterators still walking it;
// a dead table already in the old generation is still a root for young collections, so the chain of
// tables, and the requests in them, survive. Here an entry removed is unlinked both ways and forgets
// its value: what the list no longer holds, nothing holds.

/** An entry of a LiveList; `delete` takes it. */
export interface LiveEntry<T> {
  value: T | undefined;
  prev: LiveEntry<T> | null;
  next: LiveEntry<T> | null;
}

export class LiveList<T extends object> {
  private head: LiveEntry<T> | null = null;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(value: T): LiveEntry<T> {
    const entry: LiveEntry<T> = { value, prev: null, next: this.head };
    if (this.head) this.head.prev = entry;
    this.head = entry;
    this.count++;
    return entry;
  }

  /** Remove an entry; false when it was removed already (by `delete` or `take`). */
  delete(entry: LiveEntry<T>): boolean {
    if (entry.value === undefined) return false;
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    entry.prev = entry.next = null;
    entry.value = undefined;
    this.count--;
    return true;
  }

  /** The values held now, newest first (a copy: the list may change while it is used). */
  values(): T[] {
    const out: T[] = [];
    for (let e = this.head; e; e = e.next) out.push(e.value as T);
    return out;
  }

  /** Remove every entry and return their values, newest first. */
  take(): T[] {
    const out: T[] = [];
    let e = this.head;
    while (e) {
      const next = e.next;
      out.push(e.value as T);
      e.prev = e.next = null;
      e.value = undefined;
      e = next;
    }
    this.head = null;
    this.count = 0;
    return out;
  }
}
