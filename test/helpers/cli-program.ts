// The program the tests run as a child process: src/cli.ts bundled once per test worker with esbuild,
// so that each start loads one file instead of compiling some 300 modules through tsx (about a second
// of CPU a start, and the CLI and drain tests start it dozens of times). The code is the same: every
// module keeps its own import.meta.url (the migrations, the console's files and the package root are
// found beside the sources), and the packages stay external, loaded from the repository's
// node_modules. `npm start` (tsx) and the compiled dist/ keep tests of their own (test/config/,
// test/e2e/, test/cli/build.test.ts).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve('.');
const ENTRY = join(ROOT, 'src/cli.ts');

let bundled: Promise<string> | undefined;

async function bundle(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'kg-cli-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  // Bare imports resolve from the bundle's folder: give it the repository's packages.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const outfile = join(dir, 'cli.mjs');
  await build({
    entryPoints: [ENTRY],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'error',
    plugins: [
      {
        name: 'own-import-meta-url',
        setup(b) {
          b.onLoad({ filter: /\.ts$/ }, (args) => {
            const text = readFileSync(args.path, 'utf8');
            // The entry keeps the bundle's own URL: WORKERS > 1 forks the file that is running.
            const contents =
              args.path === ENTRY
                ? text
                : text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href));
            return { contents, loader: 'ts' };
          });
        },
      },
    ],
  });
  return outfile;
}

/** `node` arguments that run the program (`[...await cliArgs(), 'start']`), built on first use. */
export async function cliArgs(): Promise<string[]> {
  bundled ??= bundle();
  return [await bundled];
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a child process (`keygate ...args`): its exit code and what it wrote. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const argv = [...(await cliArgs()), ...args];
  return new Promise((done) => {
    execFile(process.execPath, argv, { env, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
