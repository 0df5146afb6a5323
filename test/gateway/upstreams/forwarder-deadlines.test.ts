// The forwarder's timers (src/gateway/deadlines.ts): the lists of one bound each and the heap for the
// deadlines no list fits (a retry's share of what is left of the whole bound), on vitest's fake clock.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineHeap, Deadlines } from '../../../src/gateway/deadlines.js';

class Entry {
  deadline = 0;
  queued = false;
  prev: Entry | null = null;
  next: Entry | null = null;
  heapIndex = -1;
  constructor(
    readonly name: string,
    private readonly log: string[],
  ) {}
  timedOut(): void {
    this.log.push(this.name);
  }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('deadline heap', () => {
  it('times entries out in the order of their deadlines, whatever the order they came in', () => {
    const log: string[] = [];
    const heap = new DeadlineHeap<Entry>();
    const now = performance.now();
    const at = [50, 10, 40, 20, 30, 60, 5];
    for (const ms of at) heap.at(new Entry(`e${ms}`, log), now + ms);
    vi.advanceTimersByTime(25);
    expect(log).toEqual(['e5', 'e10', 'e20']);
    vi.advanceTimersByTime(100);
    expect(log).toEqual(['e5', 'e10', 'e20', 'e30', 'e40', 'e50', 'e60']);
    expect(heap.size).toBe(0);
  });

  it('forgets an entry removed or moved, and keeps no timer once empty', () => {
    const log: string[] = [];
    const heap = new DeadlineHeap<Entry>();
    const now = performance.now();
    const a = new Entry('a', log);
    const b = new Entry('b', log);
    const c = new Entry('c', log);
    heap.at(a, now + 10);
    heap.at(b, now + 20);
    heap.at(c, now + 30);
    heap.remove(b);
    heap.at(a, now + 40); // moved later
    vi.advanceTimersByTime(35);
    expect(log).toEqual(['c']);
    heap.remove(a);
    expect(heap.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fires at once for a deadline already past, and one put in from a time-out is heard too', () => {
    const log: string[] = [];
    const heap = new DeadlineHeap<Entry>();
    const late = new Entry('late', log);
    const first = new Entry('first', log);
    first.timedOut = () => {
      log.push('first');
      heap.at(late, performance.now() + 5);
    };
    heap.at(first, performance.now() - 1);
    vi.advanceTimersByTime(0);
    expect(log).toEqual(['first']);
    vi.advanceTimersByTime(5);
    expect(log).toEqual(['first', 'late']);
  });
});

describe('deadlines list', () => {
  it('restarting an entry moves its deadline a whole bound on', () => {
    const log: string[] = [];
    const list = new Deadlines<Entry>(100);
    const a = new Entry('a', log);
    const b = new Entry('b', log);
    list.restart(a, performance.now());
    vi.advanceTimersByTime(50);
    list.restart(b, performance.now());
    list.restart(a, performance.now());
    vi.advanceTimersByTime(60);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(log).toEqual(['b', 'a']);
  });
});
