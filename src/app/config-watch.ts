// Reloads on a change of the profile's, the plans' or the routes' file, as SIGHUP does (no restart, no rebuild).
import { watch, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';

/**
 * Call `reload` when one of `files` (PROFILE_FILE, PLANS_FILE, ROUTES_FILE) changes on disk. The
 * directories are watched, not the files: Kubernetes updates a mounted ConfigMap by swapping the `..data`
 * symlink beside the file, which a watch on the file itself never sees. An update is a burst of events,
 * so they are debounced, and a reload runs only when the files' text differs from what was last seen. A
 * bad file is refused by `reload` (the old tables stay, as with SIGHUP); fixing it triggers the next reload.
 */
export function watchConfigFiles(files: string[], reload: () => unknown, log: Logger, debounceMs = 200): () => void {
  const text = () =>
    files
      .map((f) => {
        try {
          return readFileSync(f, 'utf8');
        } catch {
          return '';
        }
      })
      .join('\0');
  let seen = text();
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const now = text();
      if (now === seen) return;
      seen = now;
      reload();
    }, debounceMs).unref();
  };
  const watchers = [...new Set(files.map((f) => dirname(resolve(f))))].flatMap((dir) => {
    try {
      const w = watch(dir, changed).unref();
      w.on('error', (err) => log.warn({ dir, err: err.message }, 'config watch stopped; SIGHUP still reloads'));
      return [w];
    } catch (err) {
      log.warn({ dir, err: (err as Error).message }, 'config directory not watched; SIGHUP still reloads');
      return [];
    }
  });
  return () => {
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
