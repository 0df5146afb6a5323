// The partner OAuth job: access tokens nearing expiry are refreshed through the partner callback.
import type { Job } from '../domain.js';
import type { BackendServices } from '../services.js';
import { refreshTokens } from './refresh.js';

export function jobs(svc: BackendServices): Job[] {
  return [{ name: 'oauth-token-refresh', intervalMs: 60_000, run: async () => void (await refreshTokens(svc)) }];
}
