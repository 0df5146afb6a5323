// The console's bundle: src/console/main.ts and preact in one app.js (esbuild), beside index.html and
// app.css. `npm run build` writes them to dist/console/; running from src/ (npm start) the admin API
// builds the bundle in memory once, at its first request (src/admin-api/console-files.ts).
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const SRC = fileURLToPath(new URL('.', import.meta.url));

export async function bundleConsole(): Promise<Buffer> {
  const esbuild = await import('esbuild');
  const out = await esbuild.build({
    entryPoints: [join(SRC, 'main.ts')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return Buffer.from(out.outputFiles[0].contents);
}

export async function writeConsole(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'app.js'), await bundleConsole());
  for (const f of ['index.html', 'app.css']) copyFileSync(join(SRC, f), join(dir, f));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = process.argv[2] ?? 'dist/console';
  writeConsole(dir).then(
    () => console.log(`wrote ${dir}/app.js, index.html, app.css`),
    (err: Error) => {
      console.error(`console build failed: ${err.message}`);
      process.exit(1);
    },
  );
}
