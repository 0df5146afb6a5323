// The program the tests run as a child process: src/cli.ts bundled with esbuild, so that each start
// loads one file instead of compiling some 300 modules through tsx (about a second of CPU a start, and
// the CLI and drain tests start it dozens of times). The code is the same: every module keeps its own
// import.meta.url (the migrations, the console's files and the package root are found beside the
// sources), and the packages stay external, loaded from the repository's node_modules. One bundle per
// state of src/, kept in the temporary directory and shared by the workers and the runs that follow
// until a source changes. `npm start` (tsx) and the compiled dist/ keep tests of their own
// (test/config/, test/e2e/, test/cli/build.test.ts).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve('.');
const ENTRY = join(ROOT, 'src/cli.ts');
/** A bundle of other sources, older than this, is no longer used by a run. */
const STALE_MS = 3_600_000;

let bundled: Promise<string> | undefined;

/** A name for src/ as it is now: every file's path, size and modification time. */
function sourcesStamp(): string {
  const hash = createHash('sha1');
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p);
        hash.update(`${p}\0${st.size}\0${st.mtimeMs}\n`);
      }
    }
  };
  walk(join(ROOT, 'src'));
  return hash.digest('hex').slice(0, 16);
}

async function bundle(): Promise<string> {
  const dir = join(tmpdir(), `kg-cli-${createHash('sha1').update(ROOT).digest('hex').slice(0, 12)}`);
  mkdirSync(dir, { recursive: true });
  // Bare imports resolve from the bundle's folder: give it the repository's packages.
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const outfile = join(dir, `cli-${sourcesStamp()}.mjs`);
  if (existsSync(outfile)) return outfile;
  const result = await build({
    entryPoints: [ENTRY],
    outfile,
    write: false,
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
  // Workers may bundle the same sources at once: each writes its own file, and the rename is atomic.
  const partial = `${outfile}.${process.pid}.tmp`;
  writeFileSync(partial, result.outputFiles[0].contents);
  renameSync(partial, outfile);
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (f.startsWith('cli-') && f !== basename(outfile) && Date.now() - statSync(p).mtimeMs > STALE_MS)
      rmSync(p, { force: true });
  }
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
