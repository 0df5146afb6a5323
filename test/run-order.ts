// The order files start in. Vitest runs the longest first when its cache knows their durations, but a
// clean clone (CI) has no cache, and then it starts the largest files first: a short file that runs a
// minute of failovers started last and alone, and the pass waited for it (60 s of a 554 s pass at
// `8435a38`). These files start first, the longest first, as measured in those passes; the rest follow
// in vitest's own order.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LONGEST_FIRST = [
  'test/ops/drain-keepalive.test.ts',
  'test/ops/fallback-cluster.test.ts',
  'test/loadtest/cli.test.ts',
  'test/cli/keys.test.ts',
  'test/ops/audit-tamper.test.ts',
  'test/config/startup-errors.test.ts',
  'test/ops/pretenuring.test.ts',
  'test/e2e/shop-example.test.ts',
  'test/ops/connection-flood.test.ts',
  'test/cli/build.test.ts',
  'test/ops/old-generation.test.ts',
  'test/cli/state.test.ts',
  'test/config/profile-program.test.ts',
  'test/cli/data-dir-lock.test.ts',
  'test/ops/scavenge.test.ts',
  'test/ops/month-durability.test.ts',
  'test/ops/fallback-bound.test.ts',
  'test/backend/hostile-input.test.ts',
  'test/e2e/console.test.ts',
  'test/ops/workers.test.ts',
  'test/access/audit-every-change.test.ts',
];
const rank = new Map(LONGEST_FIRST.map((file, i) => [file, i]));

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const at = (f: TestSpecification) => rank.get(relative(f.project.config.root, f.moduleId)) ?? LONGEST_FIRST.length;
    // Vitest's order puts each project's files together; within a project, Array.prototype.sort is
    // stable, so files outside the list keep that order.
    const byProject = new Map<string, TestSpecification[]>();
    for (const f of await super.sort(files)) {
      const group = byProject.get(f.project.name) ?? [];
      group.push(f);
      byProject.set(f.project.name, group);
    }
    return [...byProject.values()].flatMap((group) => group.sort((a, b) => at(a) - at(b)));
  }
}
