// PLANS_FILE and ROUTES_FILE reloaded when they change on disk, without a restart: a plain edit, and
// a Kubernetes ConfigMap update (the kubelet's atomic writer swaps the `..data` symlink). A bad file is
// refused and the tables in force stay, as with SIGHUP. Real files, a real watcher, a real gateway.
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, symlinkSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, FakeClock, type Stack } from '../helpers/stack.js';
import { K } from '../fixtures/seed.js';
import { createLogger } from '../../src/ops/logger.js';
import { watchConfigFiles } from '../../src/app/config-watch.js';

const CONFIG = fileURLToPath(new URL('../../config/', import.meta.url));
const plansText = readFileSync(join(CONFIG, 'plans.json'), 'utf8');
const routesText = readFileSync(join(CONFIG, 'routes.json'), 'utf8');
const TAGS = '/v2/workspaces/{workspaceId}/tags';

/** routes.json without `GET {wid}/tags`. */
function routesWithoutTagList(): string {
  const r = JSON.parse(routesText) as { v2: { method: string; path: string }[] };
  r.v2 = r.v2.filter((x) => !(x.method === 'GET' && x.path === TAGS));
  return JSON.stringify(r, null, 2);
}

/** plans.json with the Growth plan's read budget changed. */
function plansWithGrowthRead(read: number): string {
  const p = JSON.parse(plansText) as Record<string, { read: number }>;
  p.growth.read = read;
  return JSON.stringify(p, null, 2);
}

type Line = { msg?: string; err?: string; [k: string]: unknown };

/** A logger whose lines can be awaited: `next(msg)` resolves with the first line of that message logged after the call. */
function awaitableLog() {
  const waiters: { msg: string; resolve: (l: Line) => void }[] = [];
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const text of String(chunk).split('\n').filter(Boolean)) {
        const line = JSON.parse(text) as Line;
        lines.push(line);
        for (const w of waiters.splice(0).filter((w) => (w.msg === line.msg ? (w.resolve(line), false) : true)))
          waiters.push(w);
      }
      cb();
    },
  });
  const next = (msg: string, ms = 10_000) =>
    new Promise<Line>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "${msg}" line within ${ms} ms`)), ms);
      waiters.push({ msg, resolve: (l) => (clearTimeout(timer), resolve(l)) });
    });
  return { log: createLogger('info', sink), lines, next };
}

describe('a routes file edited in place', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-watch-'));
  const out = awaitableLog();
  let s: Stack;
  beforeAll(async () => {
    writeFileSync(join(dir, 'plans.json'), plansText);
    writeFileSync(join(dir, 'routes.json'), routesText);
    s = await startStack({
      clock: new FakeClock(),
      log: out.log,
      env: { PLANS_FILE: join(dir, 'plans.json'), ROUTES_FILE: join(dir, 'routes.json') },
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tags = () => s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.8.0.1' });

  it('changes what the running gateway forwards, and a bad file is refused with the old table kept', async () => {
    expect((await tags()).status).toBe(200);

    // An editor's save: written twice in a burst (truncate, then content); one reload follows.
    let reloaded = out.next('configuration reloaded');
    writeFileSync(join(dir, 'routes.json'), '');
    writeFileSync(join(dir, 'routes.json'), routesWithoutTagList());
    await reloaded;
    const gone = await tags();
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('not_found');

    // An unknown field: refused, the line names it, and the table in force (without the tag list) stays.
    const refused = out.next('configuration reload refused; the previous files stay in force');
    const bad = JSON.parse(routesText);
    bad.v2[0].verb = 'GET';
    writeFileSync(join(dir, 'routes.json'), JSON.stringify(bad));
    expect((await refused).err).toMatch(/verb/);
    expect((await tags()).status).toBe(404);
    expect((await s.request('GET', '/v2/workspaces/100/members', { key: K.wsAdmin, ip: '10.8.0.1' })).status).toBe(200);

    // Not JSON at all: refused too.
    const refusedAgain = out.next('configuration reload refused; the previous files stay in force');
    writeFileSync(join(dir, 'routes.json'), '{"v2": [');
    await refusedAgain;
    expect((await tags()).status).toBe(404);

    // Fixed: the next change applies.
    reloaded = out.next('configuration reloaded');
    writeFileSync(join(dir, 'routes.json'), routesText);
    await reloaded;
    expect((await tags()).status).toBe(200);
    expect(out.lines.filter((l) => l.msg === 'configuration reloaded')).toHaveLength(2);
  });
});

describe('a ConfigMap volume updated by the kubelet', () => {
  // The layout of a mounted ConfigMap: the keys are symlinks through `..data`, itself a symlink to a
  // timestamped directory; an update writes a new directory and renames `..data_tmp` over `..data`.
  const dir = mkdtempSync(join(tmpdir(), 'keygate-configmap-'));
  const out = awaitableLog();
  let s: Stack;
  const project = (version: string, plans: string) => {
    mkdirSync(join(dir, version));
    writeFileSync(join(dir, version, 'plans.json'), plans);
    writeFileSync(join(dir, version, 'routes.json'), routesText);
  };
  beforeAll(async () => {
    project('..2026_11_23_10_00_00.1', plansText);
    symlinkSync('..2026_11_23_10_00_00.1', join(dir, '..data'));
    symlinkSync('..data/plans.json', join(dir, 'plans.json'));
    symlinkSync('..data/routes.json', join(dir, 'routes.json'));
    s = await startStack({
      clock: new FakeClock(),
      log: out.log,
      env: { PLANS_FILE: join(dir, 'plans.json'), ROUTES_FILE: join(dir, 'routes.json') },
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const readLimit = async () => {
    const r = await s.request('GET', '/v2/workspaces/100/rate-limit', { key: K.wsAdmin, ip: '10.8.0.2' });
    expect(r.status).toBe(200);
    return r.body.data.buckets.read.limit as number;
  };

  it('applies the new plans once the ..data symlink is swapped', async () => {
    expect(await readLimit()).toBe(20);
    const reloaded = out.next('configuration reloaded');
    project('..2026_11_23_10_05_00.2', plansWithGrowthRead(7));
    symlinkSync('..2026_11_23_10_05_00.2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..2026_11_23_10_00_00.1'), { recursive: true });
    await reloaded;
    expect(await readLimit()).toBe(7);
    const limited = await s.request('GET', '/v2/workspaces/100/tags', { key: K.wsAdmin, ip: '10.8.0.2' });
    expect(limited.headers.get('x-ratelimit-limit')).toBe('7');
  });
});

/** A reload callback that counts its calls; `called` resolves at the first. */
function countingReload() {
  let resolve!: () => void;
  const r = {
    calls: 0,
    called: new Promise<void>((res) => (resolve = res)),
    reload: () => {
      r.calls++;
      resolve();
    },
  };
  return r;
}

describe('watchConfigFiles', () => {
  it('stops watching when closed: a later change reloads nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keygate-unwatch-'));
    const file = join(dir, 'routes.json');
    writeFileSync(file, 'a');
    const { log } = awaitableLog();
    const first = countingReload();
    const stop = watchConfigFiles([file], first.reload, log, 20);
    writeFileSync(file, 'b');
    await first.called;
    expect(first.calls).toBe(1);
    stop();
    // A second watcher on the same directory sees the next write; the stopped one must not.
    const second = countingReload();
    const stopSecond = watchConfigFiles([file], second.reload, log, 20);
    writeFileSync(file, 'c');
    await second.called;
    stopSecond();
    expect(second.calls).toBe(1);
    expect(first.calls).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });
});
