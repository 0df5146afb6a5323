// No circle of imports in the sources, type imports included (CONTRIBUTING.md, Layers). ESLint's
// `import-x/no-cycle` skips `import type`, yet a circle of types still ties the modules' designs together:
// neither can be read, moved or given to another layer without the other. scripts/import-cycles.ts
// finds every strongly connected group of files; each one it names here is a circle to take apart.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importCircles } from '../../scripts/import-cycles.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

describe('the import graph of src/', () => {
  it('has no circle, type imports included', () => {
    expect(importCircles([SRC])).toEqual([]);
  });
});
