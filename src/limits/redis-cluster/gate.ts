// A Cluster's gate: its keys live in different slots, so it is the preflight's two GETs and then the
// spend or the reads, where a standalone Redis runs one script (../redis/gate.ts).
import { hitOf, type GateRequest, type GateResult, type SharedStores } from '../types.js';

export async function clusterGate(
  stores: Pick<SharedStores, 'preflight' | 'limiter'>,
  req: GateRequest,
): Promise<GateResult> {
  const pre = await stores.preflight(req.ip, req.orgId);
  if (pre.cooldown > 0) return { kind: 'cooldown', seconds: pre.cooldown };
  if (pre.version !== req.version) return { kind: 'stale' };
  if (req.spend) {
    const [key, ip, month] = await stores.limiter.spend(req.spend, 1);
    return { kind: 'spent', hit: hitOf(key, ip, month) };
  }
  return { kind: 'peeked', states: await stores.limiter.spend(req.peek ?? [], 0) };
}
