// What bench/run.ts and its forked bench/child.ts processes say to each other, and /proc memory readings.
import { readFileSync } from 'node:fs';

export type Role = 'backend' | 'gateway' | 'bare';

export interface ChildConfig {
  role: Role;
  name: string;
  /** PostgreSQL; absent: PGlite in memory in this process (then the seed is applied here too). */
  databaseUrl?: string;
  schema?: string;
  redisUrl?: string;
  redisPrefix?: string;
  gatewaySecret: string;
  internalToken: string;
  plansFile: string;
  /** Path of a JSON seed file to apply at start. */
  seedFile?: string;
  upstream?: string;
  logFile: string;
}

export type ToChild =
  { cmd: 'stats' } | { cmd: 'profile-start' } | { cmd: 'profile-stop'; file: string } | { cmd: 'stop' };
export type FromChild =
  | { cmd: 'ready'; url: string }
  | { cmd: 'failed'; error: string }
  | {
      cmd: 'stats';
      redisWrites: number;
      requests: number;
      degradedCalls: number;
      rssBytes: number;
      peakRssBytes: number;
      heapUsedBytes: number;
      cpuMicros: number;
    }
  | { cmd: 'profiled'; file: string }
  | { cmd: 'profile-started' };

/** Peak resident set size (VmHWM) and current RSS of this process, from /proc (Linux); RSS elsewhere. */
export function memory(pid: number | 'self' = 'self'): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    const rss = process.memoryUsage().rss;
    return { rss, peak: rss };
  }
}
