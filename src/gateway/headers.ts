import type { ServerResponse } from 'node:http';
import { WINDOW_MS, windowStart, type LayerState } from '../limits/types.js';

/** The five /v2 headers: the key's bucket (when a key was resolved) and the IP layer. */
export function setV2Headers(res: ServerResponse, key: LayerState | null, ip: LayerState | null): void {
  if (key) {
    res.setHeader('X-RateLimit-Limit', key.limit);
    res.setHeader('X-RateLimit-Remaining', key.remaining);
    res.setHeader('X-RateLimit-Reset', key.reset);
  }
  if (ip) {
    res.setHeader('X-RateLimit-IP-Limit', ip.limit);
    res.setHeader('X-RateLimit-IP-Remaining', ip.remaining);
  }
}

/**
 * The three /v1 headers, on every response (CONTRACT section 4). Before a key is identified (401,
 * cooldown) there is no bucket to report: the headers then show an untouched bucket of the current
 * window, since the request spent nothing.
 */
export function setV1Headers(res: ServerResponse, limit: number, key: LayerState | null, nowMs: number): void {
  res.setHeader('X-RateLimit-Limit', limit);
  res.setHeader('X-RateLimit-Remaining', key ? key.remaining : limit);
  res.setHeader('X-RateLimit-Reset', key ? key.reset : (windowStart(nowMs) + WINDOW_MS) / 1000);
}

/** Seconds until the window of `state` resets, integer, at least 1. */
export function retryAfter(state: LayerState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.reset * 1000 - nowMs) / 1000));
}
