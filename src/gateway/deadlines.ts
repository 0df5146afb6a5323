// One timer for every exchange of a forwarder (./upstream-client.ts), in the order their time runs out.

/** An entry of the Deadlines: its bound and its place in the list, kept on the entry itself. */
export interface Timed<T> {
  deadline: number;
  queued: boolean;
  prev: T | null;
  next: T | null;
  timedOut(): void;
}

/**
 * The forwarder's exchanges in the order their time runs out, under one timer. Every exchange of a
 * forwarder has the same bound and each restart sets it from now, so an exchange restarted moves to
 * the tail and the head is always the first due. A Node timer per exchange, restarted at the head and
 * at every chunk, cost about 1 µs a request (a Timeout object, the libuv clock read on each restart);
 * here a restart is a clock read and two links. An exchange removed is unlinked both ways and forgets
 * its neighbours (src/ops/live-list.ts says why that matters to the young generation).
 */
export class Deadlines<T extends Timed<T>> {
  private head: T | null = null;
  private tail: T | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ms: number) {}

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
