// Where the objects that outlive a young collection are allocated. Preloaded into a gateway under test
// (`node --import <this>`; in builds-ab: `full=<cli.js>@--import=$PWD/bench/diagnostics/survivors-hook.mjs
// @%SURVIVORS_AT=10@%SURVIVORS_FOR=30@%SURVIVORS_OUT=/tmp/full.heapprofile`): from SURVIVORS_AT s after
// start for SURVIVORS_FOR s, V8's sampling heap profiler through an in-process inspector session, keeping
// the samples of objects still alive or collected by a full collection, not those a young collection
// freed. Those are what grows the old generation between its collections. The profile (the format of
// Chrome's "allocation sampling") goes to SURVIVORS_OUT; `node bench/diagnostics/survivors-sites.mjs
// <file>` lists its allocation sites. SURVIVORS_INTERVAL sets the mean bytes between samples (2048; 16384
// costs the process less). The session costs the process much CPU: a paced load that it
// saturates keeps requests in flight across young collections, so read the shares, not the rates.
import inspector from 'node:inspector';
import { writeFileSync } from 'node:fs';

const env = process.env;
const session = new inspector.Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

setTimeout(
  async () => {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', {
      samplingInterval: Number(env.SURVIVORS_INTERVAL ?? 2048),
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: false,
    });
    setTimeout(
      async () => {
        const { profile } = await post('HeapProfiler.stopSampling');
        writeFileSync(env.SURVIVORS_OUT ?? 'survivors.heapprofile', JSON.stringify(profile));
      },
      Number(env.SURVIVORS_FOR ?? 30) * 1000,
    ).unref();
  },
  Number(env.SURVIVORS_AT ?? 10) * 1000,
).unref();
