// The delivery loop of every gateway process (WEBHOOKS_DELIVERY, docs/events.md): it claims due
// deliveries from the outbox (FOR UPDATE SKIP LOCKED, so instances never send one delivery at once),
// POSTs each signed, and records the outcome: 2xx delivered, anything else retried later on a growing
// schedule until its day runs out, then failed. A claim is a lease: a process that dies mid-send leaves
// the delivery due again when the lease ends. At most `concurrency` sends run at once, and each is
// aborted at `timeoutMs`, so a receiver that hangs holds one slot for the timeout only.
import type { Db } from '../../db/types.js';
import type { Clock } from '../../ops/clock.js';
import { claimDue, recordAttempt, sendingOf } from './queries.js';
import { webhookHeaders } from './signing.js';

/** The waits after the 1st, 2nd, ... failed attempt; after the last, every LATER_DELAY_MS until the day is out. */
export const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000];
export const LATER_DELAY_MS = 3 * 3_600_000;
/**
 * How long a claim holds a delivery: the send's timeout, then as long again and 5 s to record its outcome
 * (a database answering slowly, within DB_QUERY_TIMEOUT_MS). Past it, a sender that died lets go.
 */
export const leaseMs = (timeoutMs: number) => 2 * timeoutMs + 5_000;

/** When the next attempt is due after `attempts` failed ones, or null when the retries are over. */
export function nextAttemptAt(attempts: number, now: number, retryUntil: number): number | null {
  if (now >= retryUntil) return null;
  // The last attempt falls on the window's end rather than past it.
  return Math.min(now + (RETRY_DELAYS_MS[attempts - 1] ?? LATER_DELAY_MS), retryUntil);
}

export interface DeliveryLog {
  info(o: object, msg: string): void;
  warn(o: object, msg: string): void;
}

export interface DeliveryOptions {
  db: Db;
  /** The schedule's time: when a delivery is due, its lease, its retries. */
  clock: Clock;
  /** The webhook-timestamp's: a receiver holds it against its own wall clock, so it is the wall clock. */
  wallClock: Clock;
  timeoutMs: number;
  concurrency: number;
  /** How often the outbox is polled (a new event also wakes the loop through NOTIFY). */
  pollMs: number;
  log: DeliveryLog;
  /** The HTTP client (tests may watch it); fetch by default. */
  fetch?: typeof fetch;
}

export interface AttemptOutcome {
  httpStatus: number | null;
  /** null when delivered. */
  error: string | null;
}

/** One POST, aborted at the timeout; a redirect is an answer that is not 2xx, never followed. */
export async function post(
  doFetch: typeof fetch,
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<AttemptOutcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const res = await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'keygate-webhooks/1', ...headers },
      body,
      redirect: 'manual',
      signal: abort.signal,
    });
    await res.body?.cancel().catch(() => {});
    return { httpStatus: res.status, error: res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}` };
  } catch (err) {
    if (abort.signal.aborted) return { httpStatus: null, error: `no answer within ${timeoutMs} ms` };
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { httpStatus: null, error: String(cause?.code ?? cause?.message ?? (err as Error).message).slice(0, 200) };
  } finally {
    clearTimeout(timer);
  }
}

export class DeliveryLoop {
  readonly #o: DeliveryOptions;
  readonly #fetch: typeof fetch;
  readonly #inFlight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | null = null;
  #unlisten: (() => Promise<void>) | null = null;
  #claiming: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  constructor(o: DeliveryOptions) {
    this.#o = o;
    this.#fetch = o.fetch ?? fetch;
  }

  async start(): Promise<void> {
    this.#unlisten = await this.#o.db.listen(`keygate_events_${this.#o.db.schema}`, () => this.kick());
    this.#timer = setInterval(() => this.kick(), this.#o.pollMs);
    this.#timer.unref();
    this.kick();
  }

  /** Claim what is due now into the free slots (a claim already running claims once more after). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#again = true;
      return;
    }
    this.#claiming = this.#claimRound()
      .catch((err) => this.#o.log.warn({ err: (err as Error).message }, 'webhook deliveries: claim failed'))
      .finally(() => {
        this.#claiming = null;
        if (this.#again) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Sends running now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Claims no more; the sends running finish (each within its timeout). What is unclaimed stays in the outbox. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#unlisten?.().catch(() => {});
    await this.#claiming;
    await Promise.allSettled([...this.#inFlight]);
  }

  async #claimRound(): Promise<void> {
    const free = this.#o.concurrency - this.#inFlight.size;
    if (free <= 0) return;
    const now = this.#o.clock.now();
    const lease = new Date(now + leaseMs(this.#o.timeoutMs));
    const claimed = await claimDue(this.#o.db, new Date(now), lease, free);
    for (const c of claimed) {
      const p = this.#send(c.id, c.event_id, c.endpoint_id, c.attempts, new Date(c.retry_until).getTime())
        .catch((err) =>
          this.#o.log.warn({ delivery: c.id, err: (err as Error).message }, 'webhook delivery: outcome not recorded'),
        )
        .finally(() => {
          this.#inFlight.delete(p);
          this.kick();
        });
      this.#inFlight.add(p);
    }
    // A full round may leave more due behind it.
    if (claimed.length === free) this.#again = true;
  }

  async #send(id: number, eventId: number, endpointId: number, attempts: number, retryUntil: number): Promise<void> {
    const s = await sendingOf(this.#o.db, eventId, endpointId);
    if (!s) return;
    const stamp = Math.floor(this.#o.wallClock.now() / 1000);
    const outcome = await post(
      this.#fetch,
      s.url,
      s.body,
      webhookHeaders(s.secret, s.message_id, stamp, s.body),
      this.#o.timeoutMs,
    );
    const now = this.#o.clock.now();
    const next = outcome.error === null ? null : nextAttemptAt(attempts, now, retryUntil);
    const status = outcome.error === null ? 'delivered' : next === null ? 'failed' : 'pending';
    const recorded = await recordAttempt(this.#o.db, id, attempts, {
      status,
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      next: next === null ? null : new Date(next),
      at: new Date(now),
    });
    if (recorded && status !== 'delivered')
      this.#o.log.info(
        { delivery: id, endpoint: endpointId, attempt: attempts, status: outcome.httpStatus, error: outcome.error },
        status === 'failed' ? 'webhook delivery failed: retries over' : 'webhook delivery failed: will retry',
      );
  }
}
