// A service's retry budget, as Envoy's (`retry_budget` of a cluster's circuit breakers): retries in
// flight at most `budgetPercent` % of the service's requests in flight, but always `minConcurrent`. A
// fixed number of retries per request multiplies the load on a service exactly when it fails (every
// request tried three times against a service at its limit); a share of the traffic does not, and the
// floor keeps retries possible for a service with little traffic.

export class RetryBudget {
  private requests = 0;
  private retries = 0;

  constructor(
    private readonly percent: number,
    private readonly minConcurrent: number,
  ) {}

  /** A request of the service is in flight (once, whatever its retries). */
  begin(): void {
    this.requests++;
  }

  end(): void {
    this.requests--;
  }

  /** A retry may start now: takes its place in the budget (give it back with `retryEnded`), or false. */
  tryRetry(): boolean {
    if (this.retries + 1 > Math.max(this.minConcurrent, (this.requests * this.percent) / 100)) return false;
    this.retries++;
    return true;
  }

  retryEnded(): void {
    this.retries--;
  }

  /** Requests and retries in flight now. */
  inFlight(): { requests: number; retries: number } {
    return { requests: this.requests, retries: this.retries };
  }
}
