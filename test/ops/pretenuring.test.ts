// V8 must not decide to allocate any literal of the program directly in the old generation. At start-up
// nearly everything made lives on, so V8 "tenures" the literal sites that made it; a site also run once
// per request then makes each request's object old, and that old object keeps the request's young
// objects alive through every young collection until the next full one: 2 to 3 MB copied and promoted
// a young collection instead of 0.1 to 0.3, a full collection every 1 to 2 s (bench/RESULTS.md, "the
// high-promotion state"). Which sites start-up tenures depends on when its collections fall, so the
// state came to about one process in ten; the decisions themselves come at every start, and V8 prints
// each with `--trace-pretenuring-statistics`. Naming the flag on node's command line keeps V8's default
// (src/ops/v8-flags.ts): the second program shows the test sees the decisions when they are made (with
// pretenuring off V8 counts nothing, so the first may print no statistics line at all).
import { describe, expect, it } from 'vitest';
import { forwardingPrograms, loadTags } from '../helpers/forwarding.js';
// @ts-expect-error: a plain .mjs diagnostic without declarations
import { isTenureDecision } from '../../bench/diagnostics/promotion-state.mjs';

const startProgram = forwardingPrograms();
const start = (nodeArgs: string[] = []) => startProgram(['--trace-pretenuring-statistics', ...nodeArgs]);

const load = (port: number, n: number) => loadTags(port, n, { connections: 8, subnet: '10.2' });

/** The literal sites V8 decided to tenure, from its `pretenuring:` lines (`... maybe tenure => tenure`). */
const tenured = (output: string): string[] => output.split('\n').filter(isTenureDecision);

describe('allocation-site pretenuring', () => {
  it('no literal of the program is tenured, at start-up or under load', async () => {
    const program = await start();
    expect(new Set(await load(program.port, 2000))).toEqual(new Set([200]));
    expect(tenured(program.output())).toEqual([]);
  }, 120_000);

  it('with the flag named on the command line, V8 decides as by default (and this test sees it)', async () => {
    const program = await start(['--allocation-site-pretenuring']);
    expect(new Set(await load(program.port, 2000))).toEqual(new Set([200]));
    expect(tenured(program.output()).length).toBeGreaterThan(0);
  }, 120_000);
});
