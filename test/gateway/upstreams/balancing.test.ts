// The choice among a service's targets: least-request's two choices, weights, nginx's smooth round
// robin, and a retry's avoidance of the targets it already tried.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Balancer } from '../../../src/gateway/upstreams/balancer.js';
import { keyOf, makeSet, seeded, tally, target } from './target-kit.js';

afterEach(() => void vi.useRealTimers());

const three = ['http://10.0.0.1:80', 'http://10.0.0.2:80', 'http://10.0.0.3:80'];

describe('least-request (the default)', () => {
  it('never picks the most loaded of three: it loses every pair it is drawn in', () => {
    const { set } = makeSet({ targets: three });
    target(set, '10.0.0.1:80').outstanding = 10;
    target(set, '10.0.0.3:80').outstanding = 5;
    const n = tally(set, 3000);
    expect(n['10.0.0.1:80']).toBeUndefined();
    // 10.0.0.2 wins both pairs it is in (2 of 3), 10.0.0.3 the pair without it.
    expect(n['10.0.0.2:80']).toBeGreaterThan(1800);
    expect(n['10.0.0.3:80']).toBeGreaterThan(800);
  });

  it('shares idle targets in proportion to their weights', () => {
    const { set } = makeSet({
      targets: [
        { url: 'http://10.0.0.1:80', weight: 1 },
        { url: 'http://10.0.0.2:80', weight: 2 },
        { url: 'http://10.0.0.3:80', weight: 5 },
      ],
    });
    const n = tally(set, 8000);
    expect(n['10.0.0.1:80'] / 8000).toBeCloseTo(1 / 8, 1);
    expect(n['10.0.0.2:80'] / 8000).toBeCloseTo(2 / 8, 1);
    expect(n['10.0.0.3:80'] / 8000).toBeCloseTo(5 / 8, 1);
  });

  it('compares requests in flight per weight', () => {
    const { set } = makeSet({
      targets: [
        { url: 'http://10.0.0.1:80', weight: 4 },
        { url: 'http://10.0.0.2:80', weight: 1 },
      ],
    });
    // 4 per weight 4 is 1, 2 per weight 1 is 2: the heavier one is the less loaded.
    target(set, '10.0.0.1:80').outstanding = 4;
    target(set, '10.0.0.2:80').outstanding = 2;
    expect(tally(set, 200)).toEqual({ '10.0.0.1:80': 200 });
  });

  it('spreads requests that stay in flight evenly', () => {
    const { set } = makeSet({ targets: three });
    for (let i = 0; i < 300; i++) set.pick()!.outstanding++;
    const loads = set.all().map((t) => t.outstanding);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(2);
  });

  it('draws two distinct targets: with two, the less loaded always wins', () => {
    const { set } = makeSet({ targets: three.slice(0, 2) });
    target(set, '10.0.0.1:80').outstanding = 1;
    expect(tally(set, 100)).toEqual({ '10.0.0.2:80': 100 });
  });
});

describe('round-robin', () => {
  it('takes equal targets in turn', () => {
    const { set } = makeSet({ targets: three, balance: 'round-robin' });
    const order = Array.from({ length: 6 }, () => keyOf(set.pick()));
    expect(order).toEqual(['10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80', '10.0.0.1:80', '10.0.0.2:80', '10.0.0.3:80']);
  });

  it("is nginx's smooth weighted round robin: weights 5, 1, 1 give a a b a c a a", () => {
    const { set } = makeSet({
      balance: 'round-robin',
      targets: [
        { url: 'http://10.0.0.1:80', weight: 5 },
        { url: 'http://10.0.0.2:80', weight: 1 },
        { url: 'http://10.0.0.3:80', weight: 1 },
      ],
    });
    const name = { '10.0.0.1:80': 'a', '10.0.0.2:80': 'b', '10.0.0.3:80': 'c' } as Record<string, string>;
    const order = Array.from({ length: 14 }, () => name[keyOf(set.pick())]).join('');
    expect(order).toBe('aabacaa'.repeat(2));
  });
});

describe('a retry avoids the targets it tried', () => {
  for (const balance of ['least-request', 'round-robin'] as const) {
    it(`${balance}: never a tried one while another is admitted`, () => {
      const { set } = makeSet({ targets: three, balance });
      const first = set.pick()!;
      const tried = new Set([first]);
      for (let i = 0; i < 200; i++) expect(set.pick(tried)).not.toBe(first);
      const second = set.pick(tried)!;
      tried.add(second);
      const third = set.pick(tried)!;
      expect(new Set([first, second, third]).size).toBe(3);
      // All tried: one of them again rather than none.
      tried.add(third);
      expect(set.all()).toContain(set.pick(tried));
    });
  }

  it('least-request: the least loaded of those left', () => {
    const { set } = makeSet({ targets: three });
    const [a, b, c] = set.all();
    b.outstanding = 3;
    c.outstanding = 1;
    expect(set.pick(new Set([a]))).toBe(c);
  });

  it('weighted round-robin skips the tried one and keeps its turns for later', () => {
    const { set } = makeSet({
      balance: 'round-robin',
      targets: [
        { url: 'http://10.0.0.1:80', weight: 2 },
        { url: 'http://10.0.0.2:80', weight: 1 },
      ],
    });
    const [a, b] = set.all();
    expect(set.pick(new Set([a]))).toBe(b);
    expect(set.pick(new Set([b]))).toBe(a);
  });
});

describe('one target', () => {
  it('is returned every time, tried or not', () => {
    const { set } = makeSet({ targets: ['http://10.0.0.1:80/base/'] });
    const t = set.pick()!;
    expect(t).toMatchObject({
      key: '10.0.0.1:80',
      origin: 'http://10.0.0.1',
      authority: '10.0.0.1',
      basePath: '/base',
    });
    expect(set.pick(new Set([t]))).toBe(t);
    expect(set.all()).toEqual([t]);
  });
});

describe('the targets a URL gives', () => {
  it('keeps the configured port, IPv6 in brackets, and the base path without its trailing slash', () => {
    const { set } = makeSet({ targets: ['http://[::1]:9000/api/v2/', 'https://10.1.2.3'] });
    expect(set.all().map((t) => ({ ...t }))).toEqual(
      [
        {
          key: '[::1]:9000',
          origin: 'http://[::1]:9000',
          authority: '[::1]:9000',
          basePath: '/api/v2',
          weight: 1,
          outstanding: 0,
        },
        {
          key: '10.1.2.3:443',
          origin: 'https://10.1.2.3',
          authority: '10.1.2.3',
          basePath: '',
          weight: 1,
          outstanding: 0,
        },
      ].map((t) => expect.objectContaining(t)),
    );
  });

  it('keeps two URLs of one address apart', () => {
    const { set } = makeSet({ targets: ['http://10.0.0.1:80/a', 'http://10.0.0.1:80/b'] });
    expect(set.all().map((t) => [t.key, t.basePath])).toEqual([
      ['10.0.0.1:80', '/a'],
      ['10.0.0.1:80#2', '/b'],
    ]);
  });
});

describe('Balancer', () => {
  it('an empty list gives null', () => {
    const b = new Balancer('least-request', seeded(2));
    b.set([]);
    expect(b.pick()).toBeNull();
  });

  it('weighted draws with a random source at its ends stay in the list', () => {
    const items = [
      { weight: 1, outstanding: 0 },
      { weight: 3, outstanding: 0 },
    ];
    for (const r of [0, 0.999999999]) {
      const b = new Balancer('least-request', () => r);
      b.set(items);
      expect(items).toContain(b.pick());
    }
  });
});
