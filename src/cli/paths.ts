// Where the program's own files are, wherever it is started from: the package root holds config/
// (the data files and the demo seed) next to src/ and dist/.
import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Two levels up from src/cli/ and from dist/cli/ alike. */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A relative data-file path as the settings give it (`config/plans.json`), looked up in the working
 * directory first and then in the package, so `node /app/dist/cli.js` runs from any directory.
 */
export function dataFile(path: string): string {
  if (isAbsolute(path) || existsSync(path)) return path;
  const packaged = join(PACKAGE_ROOT, path);
  return existsSync(packaged) ? packaged : path;
}
