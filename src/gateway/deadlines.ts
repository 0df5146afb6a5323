// The timers of a forwarder's exchanges (./upstream-client.ts): lists in the order their time runs out,
// one timer each, and a heap for the few deadlines that fit no list.

/** An entry of the Deadlines: its bound and its place in the list, kept on the entry itself. */
export interface Timed<T> {
  deadline: number;
  queued: boolean;
  prev: T | null;
  next: T | null;
  timedOut(): void;
}

/** An entry of a DeadlineHeap: its place in the heap (-1 when out of it), kept on the entry itself. */
export interface HeapTimed {
  deadline: number;
  heapIndex: number;
  timedOut(): void;
}

/** Where an entry waits for its time: a Deadlines list or the heap. */
export interface DeadlineQueue<T> {
  remove(x: T): void;
}

/**
 * Exchanges in the order their time runs out, under one timer. Every entry of a list has the same bound
 * (`ms`) and each restart sets it from now, so an entry restarted moves to the tail and the head is
 * always the first due. A Node timer per exchange, restarted at the head and at every chunk, cost about
 * 1 µs a request (a Timeout object, the libuv clock read on each restart); here a restart is a clock
 * read and two links. An entry removed is unlinked both ways and forgets its neighbours
 * (src/ops/live-list.ts says why that matters to the young generation).
 */
export class Deadlines<T extends Timed<T>> implements DeadlineQueue<T> {
  private head: T | null = null;
  private tail: T | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly ms: number) {}

  /** (Re)starts the bound of `x` from `now` (performance.now()). */
  restart(x: T, now: number): void {
    x.deadline = now + this.ms;
    if (x !== this.tail) {
      if (x.queued) this.unlink(x);
      x.prev = this.tail;
      if (this.tail) this.tail.next = x;
      else this.head = x;
      this.tail = x;
      x.queued = true;
    }
    this.timer ??= setTimeout(this.expire, this.ms);
  }

  remove(x: T): void {
    if (!x.queued) return;
    this.unlink(x);
    if (this.head === null && this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private unlink(x: T): void {
    if (x.prev) x.prev.next = x.next;
    else this.head = x.next;
    if (x.next) x.next.prev = x.prev;
    else this.tail = x.prev;
    x.prev = x.next = null;
    x.queued = false;
  }

  private readonly expire = () => {
    this.timer = null;
    const now = performance.now();
    // Within a millisecond of its bound counts as due: Node's own timers keep milliseconds of the loop's clock.
    while (this.head && this.head.deadline - now < 1) {
      const x = this.head;
      this.unlink(x);
      x.timedOut();
    }
    // A restart during the loop may have set a timer for a full bound; the head may be due sooner.
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.head ? setTimeout(this.expire, Math.ceil(this.head.deadline - now)) : null;
  };
}

/**
 * Deadlines of any time, under one timer: what no list's bound gives (a retry's share of what is left of
 * the request's whole bound, a route's connect bound ended early). Few entries are here at a time, and
 * each costs a logarithm of them, not a walk.
 */
export class DeadlineHeap<T extends HeapTimed> implements DeadlineQueue<T> {
  private readonly items: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** When the timer fires (Infinity: none). */
  private timerAt = Infinity;

  /** Puts `x` in (or moves it) to time out at `deadline` (performance.now()'s clock). */
  at(x: T, deadline: number): void {
    if (x.heapIndex >= 0) this.remove(x);
    x.deadline = deadline;
    x.heapIndex = this.items.length;
    this.items.push(x);
    this.up(x.heapIndex);
    this.schedule(performance.now());
  }

  remove(x: T): void {
    const i = x.heapIndex;
    if (i < 0) return;
    x.heapIndex = -1;
    const last = this.items.pop()!;
    if (last !== x) {
      this.items[i] = last;
      last.heapIndex = i;
      this.down(i);
      this.up(last.heapIndex);
    }
    if (this.items.length === 0) this.stop();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  get size(): number {
    return this.items.length;
  }

  private schedule(now: number): void {
    const first = this.items[0];
    if (first === undefined || first.deadline >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = first.deadline;
    this.timer = setTimeout(this.expire, Math.max(0, Math.ceil(first.deadline - now)));
  }

  private readonly expire = () => {
    this.timer = null;
    this.timerAt = Infinity;
    const now = performance.now();
    while (this.items.length > 0 && this.items[0].deadline - now < 1) {
      const x = this.items[0];
      this.remove(x);
      x.timedOut();
    }
    this.schedule(now);
  };

  private up(i: number): void {
    const { items } = this;
    const x = items[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (items[p].deadline <= x.deadline) break;
      items[i] = items[p];
      items[i].heapIndex = i;
      i = p;
    }
    items[i] = x;
    x.heapIndex = i;
  }

  private down(i: number): void {
    const { items } = this;
    const n = items.length;
    const x = items[i];
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && items[c + 1].deadline < items[c].deadline) c++;
      if (items[c].deadline >= x.deadline) break;
      items[i] = items[c];
      items[i].heapIndex = i;
      i = c;
    }
    items[i] = x;
    x.heapIndex = i;
  }
}
