// Requests alternated between an open-mode and a closed-mode stack, each from a fresh client address, for
// the failover tests (Sentinel and Cluster): what each answered, and when.
import type { Stack } from './stack.js';
import { K } from '../fixtures/seed.js';

export interface FailoverAnswer {
  via: 'open' | 'closed';
  status: number;
  code?: string;
  /** The client address it was sent from. */
  ip: string;
  at: number;
  /** How long it took to answer. */
  ms: number;
}

/** `one()` sends the next request (addresses from `subnet`.x.y); `admitted()` counts the 200s so far. */
export function alternatingLoad(open: Stack, closed: Stack, subnet: string) {
  const results: FailoverAnswer[] = [];
  let seq = 0;
  const one = async () => {
    const via = seq % 2 === 0 ? 'open' : 'closed';
    const ip = `${subnet}.${seq >> 8}.${seq++ & 255}`;
    const sent = performance.now();
    const r = await (via === 'open' ? open : closed)
      .request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip })
      .catch(() => ({ status: -1, body: null }));
    const at = performance.now();
    results.push({ via, status: r.status, code: r.body?.error?.code, ip, at, ms: Math.round(at - sent) });
  };
  const admitted = () => results.filter((r) => r.status === 200).length;
  return { results, one, admitted };
}
