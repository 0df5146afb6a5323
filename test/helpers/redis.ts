// Which Redis a test talks to: the `cluster` project's Redis Cluster, else REDIS_URL, else none.
import { inject } from 'vitest';
import { createRedisClient, type RedisConnection } from '../../src/limits/redis/index.js';

export function clusterNodes(): string[] | undefined {
  const nodes = inject('redisClusterNodes');
  return nodes ? nodes.split(',') : undefined;
}

/** True when tests should use a real Redis (standalone or Cluster). */
export function haveRedis(): boolean {
  return clusterNodes() !== undefined || process.env.REDIS_URL !== undefined;
}

export function testRedisClient(commandTimeoutMs = 2000): RedisConnection {
  const nodes = clusterNodes();
  const redis = nodes
    ? createRedisClient({ clusterNodes: nodes, commandTimeoutMs })
    : createRedisClient({ url: process.env.REDIS_URL, commandTimeoutMs });
  redis.on('error', () => {});
  return redis;
}
