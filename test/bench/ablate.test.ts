// bench/diagnostics/ablate.mjs cuts steps out of a compiled build by their text. Its patterns are checked
// here against the TypeScript sources (tsc keeps these lines as written), so a change of the request path
// that a cut no longer matches fails the suite rather than measuring an uncut build under a cut's name.
import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
// @ts-expect-error: a plain .mjs diagnostic without declarations
import { CUTS, applyCut } from '../../bench/diagnostics/ablate.mjs';

type Edit = [file: string, pattern: string | RegExp, replacement: string];
const cuts = CUTS as Record<string, Edit[]>;
const source = (file: string) =>
  readFileSync(new URL(`../../src/${file.replace(/\.js$/, '.ts')}`, import.meta.url), 'utf8');

describe('ablate.mjs', () => {
  it('names the five steps the results table reports', () => {
    expect(Object.keys(cuts)).toEqual(['no-sign', 'no-limit-fields', 'no-forwarding', 'no-metrics', 'no-gate']);
  });

  for (const [name, edits] of Object.entries(cuts)) {
    it(`${name}: each pattern matches its source exactly once and the cut changes it`, () => {
      for (const [file, pattern, replacement] of edits) {
        const text = source(file);
        const cut = applyCut(text, pattern, replacement, file) as string;
        expect(cut).not.toBe(text);
      }
    });
  }

  it('refuses a pattern that matches twice or not at all', () => {
    expect(() => applyCut('a(); a();', 'a()', 'b()', 'x.ts')).toThrow(/matches 2 times/);
    expect(() => applyCut('a();', /c\(\)/, 'b()', 'x.ts')).toThrow(/matches 0 times/);
  });
});
