#!/usr/bin/env node
// The compiled program (dist/cli.js) for `npm run gateway|backend|migrate|seed|keygate` and the
// `keygate` command: it needs no dev dependency at run time. When dist/ is missing or older than src/,
// it is built first where the compiler is installed (a development checkout); where it is not (an
// install with --omit=dev), one line says to run `npm run build` on a machine that has it.
// Plain JavaScript, not TypeScript: it must run before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const entry = join(root, 'dist', 'cli.js');

/** The newest modification time under `dir` (0 for an absent directory, as in the image). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const built = existsSync(entry) ? statSync(entry).mtimeMs : -1;
const sources = Math.max(
  newest(join(root, 'src')),
  ...['tsconfig.json', 'tsconfig.build.json'].map((f) =>
    existsSync(join(root, f)) ? statSync(join(root, f)).mtimeMs : 0,
  ),
);
if (built < sources) {
  const why = built < 0 ? 'dist/ is missing' : 'dist/ is older than src/';
  if (existsSync(join(root, 'node_modules', 'typescript'))) {
    process.stderr.write(`keygate: ${why}: building it (npm run build)\n`);
    // npm's own output goes to stderr: stdout stays the command's (`keygate keys list --json`).
    const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
    const r = spawnSync(npm[0], [...npm.slice(1), 'run', 'build', '--silent'], {
      cwd: root,
      stdio: ['ignore', 2, 2],
      shell: npm.length === 1 && process.platform === 'win32',
    });
    if (r.status !== 0) {
      process.stderr.write('keygate: npm run build failed\n');
      process.exit(1);
    }
  } else if (built < 0) {
    process.stderr.write(
      'keygate: dist/ is missing: run `npm run build` (it needs the dev dependencies) before running keygate without them\n',
    );
    process.exit(2);
  } else {
    process.stderr.write(
      'keygate: warning: dist/ is older than src/; running it as built (`npm run build` updates it)\n',
    );
  }
}
await import(pathToFileURL(entry).href);
