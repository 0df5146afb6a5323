import type { ServerResponse } from 'node:http';
import type { LayerState } from '../limits/types.js';

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

/** The three /v1 headers. */
export function setV1Headers(res: ServerResponse, limit: number, key: LayerState | null): void {
  res.setHeader('X-RateLimit-Limit', limit);
  if (key) {
    res.setHeader('X-RateLimit-Remaining', key.remaining);
    res.setHeader('X-RateLimit-Reset', key.reset);
  }
}

/** Seconds until the window of `state` resets, integer, at least 1. */
export function retryAfter(state: LayerState, nowMs: number): number {
  return Math.max(1, Math.ceil((state.reset * 1000 - nowMs) / 1000));
}
