// Background jobs of the backend domains (token refresh, pending limits taking effect). Each domain
// that has one exports `jobs(svc)`; they run on unref'd intervals and can be run by hand in tests.
import type { BackendServices } from './services.js';

export interface Job {
  name: string;
  intervalMs: number;
  run(): Promise<void>;
}

const registry: ((svc: BackendServices) => Job[])[] = [];

/** Domains call this at import time to contribute their jobs. */
export function defineJobs(make: (svc: BackendServices) => Job[]): void {
  registry.push(make);
}

export function jobsOf(svc: BackendServices): Job[] {
  return registry.flatMap((m) => m(svc));
}

export function startJobs(svc: BackendServices): () => void {
  const timers = jobsOf(svc).map((job) => {
    let running = false;
    const t = setInterval(() => {
      if (running) return;
      running = true;
      job
        .run()
        .catch((err) => svc.log.error({ err: (err as Error).message, job: job.name }, 'job failed'))
        .finally(() => (running = false));
    }, job.intervalMs);
    t.unref();
    return t;
  });
  return () => timers.forEach(clearInterval);
}
