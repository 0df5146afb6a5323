// docs/settings.md is the one table of settings: every name the settings schema reads has its row.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { settingsSchema } from '../../src/config/settings.js';

/** The schema's object, under the refinements wrapped around it. */
function names(): string[] {
  let s: unknown = settingsSchema;
  for (let i = 0; i < 5 && s && !(s as { shape?: object }).shape; i++) {
    const def = (s as { _def?: { schema?: unknown; in?: unknown; innerType?: unknown } })._def;
    s = def?.schema ?? def?.in ?? def?.innerType;
  }
  return Object.keys((s as { shape?: object } | undefined)?.shape ?? {});
}

describe('docs/settings.md', () => {
  it('has a row for every setting of src/config/settings.ts', () => {
    const page = readFileSync(new URL('../../docs/settings.md', import.meta.url), 'utf8');
    const all = names();
    expect(all.length).toBeGreaterThan(50);
    expect(all.filter((n) => !page.includes(`\`${n}\``))).toEqual([]);
  });
});
