// The fleet's share while Redis is away (src/limits/fleet.ts): each counter starts from its share of
// what this instance last saw left in the window, whatever kind of counter it is (an IPv4 address is
// remembered as a number, every other counter by its id).
import { describe, expect, it } from 'vitest';
import { createFleetShare, ipv4CounterId } from '../../src/limits/fleet.js';
import { WINDOW_MS, layerState, monthState, type CounterRef, type RateLimiter } from '../../src/limits/types.js';

const START = 1_800_000_000_000 - (1_800_000_000_000 % WINDOW_MS);
const at = START + 10_000;

/** An in-memory limiter of one spend per counter: what the share adds is all that is not 1. */
const fresh: RateLimiter = {
  async spend(refs, cost) {
    return refs.map((ref) => layerState(ref.limit, cost, START));
  },
};

const ref = (id: string, limit = 100): CounterRef => ({ id, limit });
const seen = (used: number, start = START, limit = 100) => layerState(limit, used, start);

async function firstSpend(share: ReturnType<typeof createFleetShare>, r: CounterRef) {
  const [state] = await share.limiter(fresh).spend([r], 1, at);
  return state.used;
}

describe('ipv4CounterId', () => {
  it('reads an IPv4 address counter as one number, distinct per address', () => {
    expect(ipv4CounterId('ip:0.0.0.0')).toBe(0);
    expect(ipv4CounterId('ip:10.0.0.1')).toBe(0x0a000001);
    expect(ipv4CounterId('ip:255.255.255.255')).toBe(-1);
    expect(ipv4CounterId('ip:1.2.3.4')).not.toBe(ipv4CounterId('ip:4.3.2.1'));
  });

  it('leaves every other id to the string map', () => {
    for (const id of [
      'ip:2001:db8:1:2::/64',
      'ip:1.2.3',
      'ip:1.2.3.4.5',
      'ip:1.2.3.256',
      'ip:01.2.3.4',
      'ip:1..3.4',
      'ip:1.2.3.4 ',
      'k:1000:read',
      'p:7',
      'm:3',
      'ip:',
      'ip:1234.1.1.1',
    ])
      expect(ipv4CounterId(id), id).toBeNull();
  });
});

describe('the fleet share', () => {
  it('starts each kind of counter from its share of what was left', async () => {
    const share = createFleetShare();
    share.setLive(2);
    const counters = [ref('ip:10.0.0.1'), ref('ip:2001:db8:1:2::/64'), ref('k:1000:read')];
    share.saw(counters, [seen(40), seen(60), seen(90)]);
    // Left 60, 40 and 10, split two ways: the first spend is the 31st, 21st and 6th of what is left.
    expect(await firstSpend(share, counters[0])).toBe(100 - 30 + 1);
    expect(await firstSpend(share, counters[1])).toBe(100 - 20 + 1);
    expect(await firstSpend(share, counters[2])).toBe(100 - 5 + 1);
  });

  it('gives an unseen address its share of the whole budget, not another address count', async () => {
    const share = createFleetShare();
    share.setLive(4);
    share.saw([ref('ip:10.0.0.1')], [seen(80)]);
    expect(await firstSpend(share, ref('ip:10.0.0.2'))).toBe(100 - 25 + 1);
    expect(await firstSpend(share, ref('ip:10.0.0.1'))).toBe(100 - 5 + 1);
  });

  it('keeps the highest count of a window, forgets the window when the next one is seen', async () => {
    const share = createFleetShare();
    const ip = ref('ip:192.168.7.9');
    share.saw([ip], [seen(70)]);
    share.saw([ip], [seen(30)]); // a reply that arrived late
    expect(await firstSpend(share, ip)).toBe(100 - 30 + 1);
    share.saw([ip], [seen(5, START + WINDOW_MS)]);
    // The window in which the next spend falls is no longer the one remembered: the whole budget.
    expect(await firstSpend(share, ip)).toBe(1);
  });

  it('admits nothing more for a counter it saw spent', async () => {
    const share = createFleetShare();
    share.setLive(3);
    share.saw([ref('ip:10.1.1.1'), ref('k:9:write', 10)], [seen(100), seen(10, START, 10)]);
    expect(await firstSpend(share, ref('ip:10.1.1.1'))).toBe(101);
    expect(await firstSpend(share, ref('k:9:write', 10))).toBe(11);
  });

  it("keeps a monthly quota's count apart from the minute's, and gives the month its share too", async () => {
    const share = createFleetShare();
    share.setLive(2);
    const key = ref('k:1000:read', 20);
    const month: CounterRef = { id: 'm:1', limit: 10, month: true };
    // A spend with the month (the uncached path), then minutes seen after it: the month's end as its
    // window once made every later minute look older than the one remembered.
    share.saw([key, ref('ip:10.0.0.1'), month], [seen(2, START, 20), seen(1), monthState(10, 6, at)]);
    share.saw([key], [seen(8, START, 20)]);
    // Left 12 and 4, split two ways: the first spend is the 7th and the 3rd of what is left.
    const [keyState, , monthNow] = await share.limiter(fresh).spend([key, ref('ip:10.0.0.9'), month], 1, at);
    expect(keyState.used).toBe(20 - 6 + 1);
    expect(monthNow.used).toBe(10 - 2 + 1);
  });

  it("hands the memory each counter's allowance as its limit, so a month seen spent admits nothing", async () => {
    const share = createFleetShare();
    const limits: number[][] = [];
    const recording: RateLimiter = {
      async spend(refs, cost) {
        limits.push(refs.map((r) => r.limit));
        return refs.map((r) => layerState(r.limit, cost, START));
      },
    };
    const month: CounterRef = { id: 'm:1', limit: 10, month: true };
    share.setLive(2);
    share.saw([month], [monthState(10, 10, at)]);
    await share.limiter(recording).spend([ref('k:1', 20), month], 1, at);
    expect(limits).toEqual([[10, 0]]);
  });
});
