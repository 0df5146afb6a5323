// The active health check: every interval, one GET of the service's probe path on each target, sent
// to the target's address with the Host the service expects. A 2xx answer within the timeout passes;
// anything else (another status, refused, reset, silence) fails.
import http from 'node:http';
import https from 'node:https';
import { tlsNameOf } from './dns.js';
import type { ServiceConfig } from '../../config/services.js';
import type { Target } from './types.js';

export type ProbeFn = (target: Target, path: string, timeoutMs: number) => Promise<boolean>;

/** The default probe over node:http(s), one connection per probe; `signal` abandons those in flight. */
export function httpProbe(signal?: AbortSignal): ProbeFn {
  return (target, path, timeoutMs) =>
    new Promise<boolean>((resolve) => {
      if (signal?.aborted) return resolve(false);
      const url = new URL(target.origin);
      const tls = url.protocol === 'https:';
      const serverName = tls ? tlsNameOf(target.authority) : undefined;
      const req = (tls ? https : http).request({
        host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port || (tls ? 443 : 80),
        method: 'GET',
        path: target.basePath + path,
        headers: { host: target.authority, 'user-agent': 'keygate-probe' },
        agent: false,
        // The certificate is checked against the configured name, not the address connected to.
        ...(serverName === undefined ? {} : { servername: serverName }),
      });
      let settled = false;
      const finish = (pass: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        req.destroy();
        resolve(pass);
      };
      const onAbort = () => finish(false);
      const timer = setTimeout(onAbort, timeoutMs);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        res.resume();
        finish(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300);
      });
      req.on('error', () => finish(false));
      req.end();
    });
}

/** Runs the probe rounds of one service: `round()` now, then every `intervalMs` until `close()`. */
export class Prober<S extends Target & { probing: boolean }> {
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly cfg: NonNullable<ServiceConfig['probe']>,
    private readonly probe: ProbeFn,
    private readonly targets: () => readonly S[],
    private readonly onResult: (target: S, pass: boolean) => void,
  ) {}

  start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.round(), this.cfg.intervalMs);
    this.timer.unref();
    void this.round();
  }

  /** One probe of each target not still being probed; settles when they have all answered. */
  round(): Promise<void> {
    const runs: Promise<void>[] = [];
    for (const t of this.targets()) {
      if (t.probing || this.closed) continue;
      t.probing = true;
      runs.push(
        this.probeOnce(t).then((pass) => {
          t.probing = false;
          if (!this.closed) this.onResult(t, pass);
        }),
      );
    }
    return Promise.all(runs).then(() => undefined);
  }

  private async probeOnce(t: S): Promise<boolean> {
    try {
      return await this.probe(t, this.cfg.path, this.cfg.timeoutMs);
    } catch {
      return false;
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
