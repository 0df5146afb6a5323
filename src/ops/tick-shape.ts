// Keep the shape of Node's `process.nextTick` entries alive for the life of the process.
//
// Each `process.nextTick` builds `{ [async_id_symbol]: id, [trigger_async_id_symbol]: id, callback,
// args }`, a literal with computed keys, so V8 reaches its hidden classes by transitions from the
// empty object's and keeps those classes only while an object uses them. The queue is usually
// empty between events, so a full garbage collection drops them; the next tick builds new ones, and
// after a few full collections the literal's inline caches go megamorphic for good. From then on
// every tick defines its properties in the V8 runtime: about 200 ns more per tick here, and a
// proxied request makes about 20 ticks in Node's streams and HTTP code. A gateway collects its old
// generation every few seconds under load (cached principals, metrics, sockets), so it met this
// where a bare proxy rarely does (bench/RESULTS.md, "V8 feedback for process.nextTick").
//
// Holding one real tick object keeps its hidden classes, and with them the transitions, alive: the
// caches stay monomorphic. The object is caught through an async_hooks init hook that is enabled for
// one tick at start-up and then disabled (hooks left enabled would cost every async operation).
import { createHook } from 'node:async_hooks';

let kept: object | null = null;

/** Capture one tick object, once per process; resolves true once it is held. */
export function keepTickShape(): Promise<boolean> {
  if (kept) return Promise.resolve(true);
  return new Promise((resolve) => {
    const hook = createHook({
      init(_id, type, _trigger, resource) {
        if (type === 'TickObject' && !kept) kept = resource as object;
      },
    });
    hook.enable();
    process.nextTick(() => {
      hook.disable();
      resolve(kept !== null);
    });
  });
}
