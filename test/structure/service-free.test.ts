// CI's pass with the services leaves the files of test/service-free-files.ts to its default pass. That
// is right only while none of them reaches for PostgreSQL or Redis: a file that starts to would lose its
// run against them without a word. Every use of the services' variables in those files must remove
// them from a child's environment.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVICE_FREE_FILES } from '../service-free-files.js';

/** Lines that reach for a service: the test database or stack helpers, or the variables kept. */
function serviceUses(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .filter(
      (line) =>
        /\b(openTestDb|startStack|appStores|createRedis)\b/.test(line) ||
        (/\b(DATABASE_URL|REDIS_URL|REDIS_CLUSTER_NODES)\b/.test(line) && !/^\s*delete \w+\.\w+;$/.test(line)),
    );
}

describe('the files the services pass leaves to the default pass', () => {
  it.each(SERVICE_FREE_FILES)('%s never uses PostgreSQL or Redis', (file) => {
    expect(existsSync(file)).toBe(true);
    expect(serviceUses(readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('the check sees a use', () => {
    expect(serviceUses('const db = await openTestDb();\nconst url = process.env.REDIS_URL;\n')).toHaveLength(2);
    expect(serviceUses('  delete base.DATABASE_URL;\n// DATABASE_URL in a comment\n')).toEqual([]);
  });
});
