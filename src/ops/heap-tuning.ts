// V8's allocation-site pretenuring, turned off for the life of the process.
//
// V8 watches each allocation site (an object literal, an array, a closure in the code) and, when most
// of what it allocated survived a young-generation collection, allocates from that site straight in
// the old generation. Under a burst, a gateway's per-request objects (its request context, response
// fields, the closures of a request) are in flight across collections, so their sites get pretenured;
// from then on every request fills the old generation, the scavenges slow down (old-to-young pointers
// to scan) and full collections come every second or two, long after the burst. Measured in front of
// a trivial upstream (bench/diagnostics/builds-ab.ts, bench/RESULTS.md): 1.21 x the bare proxy's CPU
// per request with pretenuring, 1.05 x with it turned off at start-up, and scavenges of 2.7 instead
// of 3.7 ms. The flag is read by the collector at every collection, so setting it at run time works
// (test/ops/heap-tuning.test.ts checks V8's own trace).
import v8 from 'node:v8';

let tuned = false;

export function tuneHeap(): void {
  if (tuned) return;
  tuned = true;
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}
