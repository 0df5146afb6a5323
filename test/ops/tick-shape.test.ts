// src/ops/tick-shape.ts: holding one tick object keeps process.nextTick's inline caches monomorphic
// through full garbage collections. Checked in a child process with V8's own view of the feedback
// (%DebugPrint, behind --allow-natives-syntax), after the same bursts of ticks and full collections
// with and without the workaround. Part of `npm run test:perf`: the child processes load a core for a while.
import { createHook } from 'node:async_hooks';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { keepTickShape } from '../../src/ops/tick-shape.js';
import { PRINT_NEXT_TICK, runWithNatives, tickLiteralFeedback } from '../../bench/v8-feedback.js';

const MODULE = fileURLToPath(new URL('../../src/ops/tick-shape.ts', import.meta.url));

/** The states of the literal's property-definition slots in nextTick's feedback vector. */
function nextTickFeedback(keep: boolean): string[] {
  const script = `
    const { keepTickShape } = await import(${JSON.stringify(MODULE)});
    if (${keep}) { if (!(await keepTickShape())) throw new Error('no tick object caught'); }
    for (let round = 0; round < 16; round++) {
      for (let i = 0; i < 5000; i++) await new Promise((r) => process.nextTick(r));
      await new Promise((r) => setImmediate(r));
      globalThis.gc();
      // A turn through the timers phase, as between a server's events: without it V8 kept the
      // control's shapes in some runs here (not a wait for anything to happen).
      await new Promise((r) => setTimeout(r, 1));
    }
    ${PRINT_NEXT_TICK}
  `;
  const out = runWithNatives(['--input-type=module', '-e', script]);
  const slots = tickLiteralFeedback(out);
  if (slots.length === 0)
    throw new Error(`no feedback slots in V8's print of process.nextTick:\n${out.slice(0, 3000)}`);
  return slots;
}

describe('the shape of process.nextTick entries', () => {
  it('catches one tick object, once per process', async () => {
    // This file's process has not started an app, so this is the process's first call.
    await expect(keepTickShape()).resolves.toBe(true);
    // A later call answers from the object it holds: no hook is enabled again and no tick is scheduled
    // to catch another one (counted by a hook of the test's own around the call).
    const scheduled: string[] = [];
    const counter = createHook({
      init(_id, type) {
        if (type === 'TickObject') scheduled.push(type);
      },
    }).enable();
    const again = keepTickShape();
    counter.disable();
    expect(scheduled).toEqual([]);
    await expect(again).resolves.toBe(true);
  });

  it('keeps nextTick monomorphic through full collections, which without it turn megamorphic', () => {
    const held = nextTickFeedback(true);
    expect(held).toHaveLength(4); // the four properties of a tick object
    expect(held.every((s) => s === 'MONOMORPHIC')).toBe(true);
    // The control: the V8 behaviour the workaround exists for. If this stops holding (a newer V8),
    // src/ops/tick-shape.ts is no longer needed.
    const control = nextTickFeedback(false);
    expect(control).toContain('MEGAMORPHIC');
  }, 120_000);
});
