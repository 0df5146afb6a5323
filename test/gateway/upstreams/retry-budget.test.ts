// A service's retry budget (src/gateway/upstreams/retry-budget.ts): retries in flight at most
// max(minConcurrent, budgetPercent % of the requests in flight), as Envoy's retry budget.
import { describe, expect, it } from 'vitest';
import { RetryBudget } from '../../../src/gateway/upstreams/retry-budget.js';

function withRequests(percent: number, min: number, requests: number): RetryBudget {
  const b = new RetryBudget(percent, min);
  for (let i = 0; i < requests; i++) b.begin();
  return b;
}

/** Retries the budget lets start, one after another, none ending. */
function granted(b: RetryBudget): number {
  let n = 0;
  while (n < 10_000 && b.tryRetry()) n++;
  return n;
}

describe('retry budget', () => {
  it('lets the share of the requests in flight retry at once', () => {
    expect(granted(withRequests(20, 3, 100))).toBe(20);
    expect(granted(withRequests(50, 0, 7))).toBe(3); // 3.5 in flight would be over the share
  });

  it('always lets the floor retry, however few the requests', () => {
    expect(granted(withRequests(20, 3, 1))).toBe(3);
    expect(granted(withRequests(20, 3, 0))).toBe(3);
  });

  it('refuses every retry at 0 % without a floor', () => {
    expect(granted(withRequests(0, 0, 1000))).toBe(0);
  });

  it('gives a place back when a retry ends, and follows the requests in flight', () => {
    const b = withRequests(10, 1, 20);
    expect(granted(b)).toBe(2);
    b.retryEnded();
    expect(b.tryRetry()).toBe(true);
    expect(b.tryRetry()).toBe(false);
    for (let i = 0; i < 10; i++) b.end();
    b.retryEnded();
    b.retryEnded();
    expect(b.inFlight()).toEqual({ requests: 10, retries: 0 });
    expect(granted(b)).toBe(1);
  });
});
