// Background jobs of the backend domains (token refresh, pending limits taking effect, ...), as each
// domain declares them (domains.ts). They run on unref'd intervals and can be run by hand in tests.
import type { Job } from './domain.js';
import type { BackendServices } from './services.js';
import { DOMAINS } from './domains.js';

export type { Job } from './domain.js';

export function jobsOf(svc: BackendServices): Job[] {
  return DOMAINS.flatMap((domain) => domain.jobs?.(svc) ?? []);
}

export function startJobs(svc: BackendServices): () => void {
  const timers = jobsOf(svc).map((job) => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      job
        .run()
        .catch((err) => svc.log.error({ err: (err as Error).message, job: job.name }, 'job failed'))
        .finally(() => (running = false));
    }, job.intervalMs);
    timer.unref();
    return timer;
  });
  return () => timers.forEach(clearInterval);
}
