// For tests whose gateway builds its own stores from the environment (the breaker included): the
// environment that points it at the test Redis (the `cluster` project's Cluster, else REDIS_URL),
// and a reader of the gateway's Prometheus counters.
import { clusterNodes } from './redis.js';

/** REDIS_CLUSTER_NODES or REDIS_URL for startStack({ appStores: true, env }). */
export function appRedisEnv(): Record<string, string> {
  const nodes = clusterNodes();
  if (nodes) return { REDIS_CLUSTER_NODES: nodes.join(',') };
  if (process.env.REDIS_URL === undefined) throw new Error('appRedisEnv: no Redis configured for this run');
  return { REDIS_URL: process.env.REDIS_URL };
}

/** The value of one series (`name` including its labels) on the admin /metrics page; 0 when absent. */
export async function metricValue(adminUrl: string, series: string): Promise<number> {
  const text = await (await fetch(adminUrl + '/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Store calls the gateway answered without Redis, in either RATE_LIMIT_FAILURE_MODE. */
export async function callsWithoutRedis(adminUrl: string): Promise<number> {
  return (
    (await metricValue(adminUrl, 'keygate_degraded_calls_total{mode="open"}')) +
    (await metricValue(adminUrl, 'keygate_degraded_calls_total{mode="closed"}'))
  );
}
