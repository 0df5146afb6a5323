// Background jobs of the backend domains (token refresh, pending limits taking effect, ...). Each domain
// that has any exports `jobs(svc)` from its jobs.ts, listed here; they run on unref'd intervals and can
// be run by hand in tests.
import type { BackendServices } from './services.js';
import { jobs as accountJobs } from './accounts/jobs.js';
import { jobs as oauthJobs } from './oauth/jobs.js';
import { jobs as warmupJobs } from './warmup/jobs.js';
import { jobs as auditJobs } from './api-keys/jobs.js';

export interface Job {
  name: string;
  intervalMs: number;
  run(): Promise<void>;
}

const DOMAIN_JOBS = [warmupJobs, oauthJobs, accountJobs, auditJobs];

export function jobsOf(svc: BackendServices): Job[] {
  return DOMAIN_JOBS.flatMap((jobsOfDomain) => jobsOfDomain(svc));
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
