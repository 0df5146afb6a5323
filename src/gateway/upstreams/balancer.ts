// Choosing one target of a list, on every request's path: no array or closure per pick. The list is
// set again only when it changes (a target ejected or re-admitted, a DNS answer), which is rare.
//
// least-request is Envoy's "power of two choices": two distinct targets drawn at random (in proportion
// to their weights), the one with fewer requests in flight per weight wins, a tie going to the first
// drawn, so that idle targets share the traffic by weight. round-robin is nginx's smooth weighted round
// robin (ngx_http_upstream_get_peer): every pick adds each target's weight to its running score, takes
// the highest and subtracts the total from it, which spreads a heavy target's turns rather than
// bunching them.

export type BalanceKind = 'least-request' | 'round-robin';

export interface Weighted {
  readonly weight: number;
  outstanding: number;
}

export class Balancer<T extends Weighted> {
  private list: readonly T[] = [];
  /** cum[k]: the weights of list[0..k] summed (weighted draws only). */
  private cum: number[] = [];
  private total = 0;
  private uniform = true;
  /** Smooth round robin's running scores; with equal weights only `next` is used. */
  private score: number[] = [];
  private next = 0;

  constructor(
    private readonly kind: BalanceKind,
    private readonly random: () => number,
  ) {}

  get size(): number {
    return this.list.length;
  }

  set(list: readonly T[]): void {
    this.list = list;
    this.cum = [];
    this.total = 0;
    for (const t of list) this.cum.push((this.total += t.weight));
    this.uniform = list.every((t) => t.weight === list[0].weight);
    this.score = list.map(() => 0);
    this.next = list.length > 0 ? this.next % list.length : 0;
  }

  /** One of the list, avoiding those in `tried` while another exists; null for an empty list. */
  pick(tried?: ReadonlySet<T>): T | null {
    const n = this.list.length;
    if (n <= 1) return n === 1 ? this.list[0] : null;
    const avoid = tried !== undefined && tried.size > 0 && this.untried(tried) ? tried : undefined;
    if (this.kind === 'round-robin') return this.uniform ? this.cycle(avoid) : this.smooth(avoid);
    return avoid ? this.leastOf(avoid) : this.twoChoices();
  }

  private untried(tried: ReadonlySet<T>): boolean {
    for (const t of this.list) if (!tried.has(t)) return true;
    return false;
  }

  private twoChoices(): T {
    const i = this.draw(-1);
    const a = this.list[i];
    const b = this.list[this.draw(i)];
    // b.outstanding / b.weight < a.outstanding / a.weight, without dividing.
    return b.outstanding * a.weight < a.outstanding * b.weight ? b : a;
  }

  /** An index drawn in proportion to the weights, never `exclude` (-1: none excluded). */
  private draw(exclude: number): number {
    const n = this.list.length;
    const r = this.random();
    if (this.uniform) {
      if (exclude < 0) return Math.min(n - 1, Math.floor(r * n));
      const k = Math.min(n - 2, Math.floor(r * (n - 1)));
      return k >= exclude ? k + 1 : k;
    }
    let x: number;
    if (exclude < 0) x = r * this.total;
    else {
      const w = this.list[exclude].weight;
      x = r * (this.total - w);
      // Skip over the excluded target's stretch of the line.
      if (x >= this.cum[exclude] - w) x += w;
    }
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cum[mid] > x) hi = mid;
      else lo = mid + 1;
    }
    return lo === exclude ? (lo + 1) % n : lo;
  }

  /**
   * A retry: the least loaded per weight of those not tried, ties drawn by weight (one reservoir pass;
   * a retry is rare and `tried` small).
   */
  private leastOf(avoid: ReadonlySet<T>): T {
    let best: T | null = null;
    let tiedWeight = 0;
    for (const t of this.list) {
      if (avoid.has(t)) continue;
      const cmp = best === null ? -1 : t.outstanding * best.weight - best.outstanding * t.weight;
      if (cmp < 0) {
        best = t;
        tiedWeight = t.weight;
      } else if (cmp === 0) {
        tiedWeight += t.weight;
        if (this.random() * tiedWeight < t.weight) best = t;
      }
    }
    return best!;
  }

  private cycle(avoid: ReadonlySet<T> | undefined): T {
    const n = this.list.length;
    for (let s = 0; s < n; s++) {
      const k = (this.next + s) % n;
      if (avoid?.has(this.list[k])) continue;
      this.next = (k + 1) % n;
      return this.list[k];
    }
    return this.list[0];
  }

  private smooth(avoid: ReadonlySet<T> | undefined): T {
    let best = -1;
    let total = 0;
    for (let k = 0; k < this.list.length; k++) {
      const t = this.list[k];
      if (avoid?.has(t)) continue;
      this.score[k] += t.weight;
      total += t.weight;
      if (best < 0 || this.score[k] > this.score[best]) best = k;
    }
    this.score[best] -= total;
    return this.list[best];
  }
}
