// The console's static files (src/console/), served by the admin API listener at / with a strict
// Content-Security-Policy: everything from this origin, nothing inline, nothing from elsewhere.
// A built package has them in dist/console/; from src/ (npm start under tsx) the bundle is made in
// memory once with esbuild, a development dependency.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import type http from 'node:http';

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

export class ConsoleFiles {
  private readonly files = new Map<string, Promise<Buffer>>();

  constructor(private readonly dir = fileURLToPath(new URL('../console/', import.meta.url))) {}

  private load(name: string): Promise<Buffer> {
    let p = this.files.get(name);
    if (!p) {
      const file = join(this.dir, name);
      p =
        name === 'app.js' && !existsSync(file)
          ? import(
              pathToFileURL(join(this.dir, existsSync(join(this.dir, 'build.ts')) ? 'build.ts' : 'build.js')).href
            ).then((m: { bundleConsole(): Promise<Buffer> }) => m.bundleConsole())
          : readFile(file);
      // A failed build or read is retried by the next request, not remembered.
      p.catch(() => this.files.delete(name));
      this.files.set(name, p);
    }
    return p;
  }

  /** Answer `path` when it is one of the console's files (any other path is the page: hash routes). */
  async serve(path: string, head: boolean, res: http.ServerResponse): Promise<boolean> {
    const name = path === '/' || path === '/index.html' ? 'index.html' : path.slice(1);
    if (!(name in TYPES)) return false;
    const body = await this.load(name);
    res.writeHead(200, {
      'content-type': TYPES[name],
      'content-length': body.length,
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'cache-control': 'no-cache',
    });
    res.end(head ? undefined : body);
    return true;
  }
}
