// deploy/forward-auth/nginx.conf as a run on loopback uses it (test/deploy/nginx-forward-auth.test.ts,
// bench/forward-auth/run.ts): the file itself, its addresses replaced by the run's, its logs and
// nginx's temporary files in the run's folder. Each line replaced must be in the file exactly once, so
// a change to the file that the runs would no longer follow fails loudly instead of running something else.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FORWARD_AUTH_NGINX_CONF = fileURLToPath(new URL('../../deploy/forward-auth/nginx.conf', import.meta.url));

export interface NginxAddresses {
  /** The port nginx listens on (127.0.0.1). */
  listen: number;
  /** The two decision instances' DECISION_PORTs. */
  decision: [number, number];
  /** The service's port. */
  app: number;
  /** Worker processes (the file says auto). */
  workers?: number;
  /** The access log (the file logs which instance decided each request); off for a benchmark. */
  accessLog?: boolean;
}

/** The configuration's text for `dir`. */
export function nginxConfText(
  dir: string,
  a: NginxAddresses,
  template = readFileSync(FORWARD_AUTH_NGINX_CONF, 'utf8'),
) {
  let text = template;
  const swap = (from: string, to: string) => {
    const n = text.split(from).length - 1;
    if (n !== 1) throw new Error(`deploy/forward-auth/nginx.conf: "${from}" found ${n} times, expected once`);
    text = text.replace(from, to);
  };
  swap('listen 80;', `listen 127.0.0.1:${a.listen};`);
  swap('server 10.0.0.11:8082;', `server 127.0.0.1:${a.decision[0]};`);
  swap('server 10.0.0.12:8082;', `server 127.0.0.1:${a.decision[1]};`);
  swap('server 127.0.0.1:8081;', `server 127.0.0.1:${a.app};`);
  if (a.workers !== undefined) swap('worker_processes auto;', `worker_processes ${a.workers};`);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((p) => `${p}_temp_path ${join(dir, p)};`);
  swap(
    'access_log /var/log/nginx/keygate.log keygate;',
    [a.accessLog === false ? 'access_log off;' : `access_log ${join(dir, 'access.log')} keygate;`, ...temp].join(
      '\n  ',
    ),
  );
  return text;
}

/** Writes `dir`/nginx.conf; returns nginx's arguments (prefix, error log, config, foreground, pid in `dir`). */
export function writeNginxConf(dir: string, a: NginxAddresses): string[] {
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfText(dir, a));
  return ['-p', dir, '-e', join(dir, 'error.log'), '-c', conf, '-g', `daemon off; pid ${join(dir, 'nginx.pid')};`];
}
