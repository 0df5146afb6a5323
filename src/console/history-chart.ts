/// <reference lib="dom" />
// The usage history of a key or an organization (GET .../usage/history) over 24 hours, 7 days or 30
// days: one stacked bar per hour (per day over 30 days) by outcome, drawn by uPlot. What the gateway
// admitted sits at the bottom in blues and greens, what it refused on top in oranges and reds, so the
// split reads at a glance; the legend below names every outcome with its total over the period, or its
// count in the bar under the pointer. Times are UTC, as the history's buckets are.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { useApi, type Json } from './api.js';
import { Err, when } from './ui.js';

export type Range = '24h' | '7d' | '30d';

const RANGES: Record<Range, { label: string; buckets: number; granularity: 'hour' | 'day'; step: number }> = {
  '24h': { label: '24 hours', buckets: 24, granularity: 'hour', step: 3600 },
  '7d': { label: '7 days', buckets: 7 * 24, granularity: 'hour', step: 3600 },
  '30d': { label: '30 days', buckets: 30, granularity: 'day', step: 86400 },
};

interface Outcome {
  id: string;
  label: string;
  color: string;
  admitted: boolean;
}

/**
 * The outcomes the history counts, bottom of the stack first. Every `refused_<code>` (authentication
 * and authorization refusals) is one series here; the legend lists the codes.
 */
export const OUTCOMES: Outcome[] = [
  { id: 'forwarded_2xx', label: 'forwarded, upstream 2xx', color: '#2f7dd1', admitted: true },
  { id: 'forwarded_3xx', label: 'forwarded, upstream 3xx', color: '#8cbcef', admitted: true },
  { id: 'forwarded_4xx', label: 'forwarded, upstream 4xx', color: '#7b61c9', admitted: true },
  { id: 'forwarded_5xx', label: 'forwarded, upstream 5xx', color: '#3b2a7a', admitted: true },
  { id: 'answered', label: 'answered by the gateway', color: '#2e9e6b', admitted: true },
  { id: 'limited_key', label: 'refused: key rate limit', color: '#f2b15c', admitted: false },
  { id: 'limited_address', label: 'refused: address rate limit', color: '#e07b39', admitted: false },
  { id: 'limited_month', label: 'refused: monthly quota', color: '#b8572a', admitted: false },
  { id: 'refused', label: 'refused: key, scope or access', color: '#b3261e', admitted: false },
];

interface Series {
  /** Bucket starts, Unix seconds, every bucket of the period (the API may leave empty ones out). */
  xs: number[];
  /** Per outcome (OUTCOMES' order), per bucket. */
  ys: number[][];
  /** The refusal codes' totals over the period. */
  codes: Record<string, number>;
}

function seconds(t: unknown): number {
  if (typeof t === 'number') return t > 1e12 ? Math.floor(t / 1000) : t;
  return Math.floor(Date.parse(String(t)) / 1000);
}

/** The period's buckets as the chart draws them, from the history's answer. */
export function seriesOf(data: Json, range: Range, now: number): Series {
  const { buckets, step } = RANGES[range];
  const last = Math.floor(now / step) * step;
  const xs = Array.from({ length: buckets }, (_, i) => last - (buckets - 1 - i) * step);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = OUTCOMES.map(() => xs.map(() => 0));
  const codes: Record<string, number> = {};
  for (const b of (data?.buckets ?? data?.items ?? []) as Json[]) {
    const i = index.get(Math.floor(seconds(b.start ?? b.at ?? b.time ?? b.bucket) / step) * step);
    if (i === undefined) continue;
    const counts: Record<string, number> = b.counts ?? b.outcomes ?? b.byOutcome ?? {};
    for (const [name, n] of Object.entries(counts)) {
      if (typeof n !== 'number') continue;
      if (name.startsWith('refused_')) {
        ys[OUTCOMES.length - 1][i] += n;
        const code = name.slice('refused_'.length);
        codes[code] = (codes[code] ?? 0) + n;
      } else {
        const o = OUTCOMES.findIndex((x) => x.id === name);
        if (o >= 0) ys[o][i] += n;
      }
    }
  }
  return { xs, ys, codes };
}

/** An axis tick: the hour (`14:00`), the day at midnight and on the daily chart (`12-04`). */
function tick(ts: number, step: number): string {
  const d = new Date(ts * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (step >= 86400 || ts % 86400 === 0) return `${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  return `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
}

const fmt = (n: number) => n.toLocaleString('en-US');

function chartOptions(s: Series, range: Range, width: number, onCursor: (i: number | null) => void): uPlot.Options {
  const { step, granularity } = RANGES[range];
  const bars = uPlot.paths.bars!({ size: [0.8, 48], align: 0 });
  // Stacked by hand: the top of the stack is drawn first and each lower total over it, so every bar
  // shows each outcome's share; uPlot draws the series in order.
  return {
    width,
    height: 240,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    legend: { show: false },
    cursor: { points: { show: false }, drag: { x: false, y: false, setScale: false } },
    scales: {
      x: { time: true, range: () => [s.xs[0] - step / 2, s.xs[s.xs.length - 1] + step / 2] },
      y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] },
    },
    axes: [
      {
        label: 'time (UTC)',
        labelSize: 20,
        space: 56,
        values: (_u, splits) => splits.map((v) => tick(v, step)),
        grid: { stroke: '#edf0f3' },
      },
      {
        label: `requests per ${granularity}`,
        labelSize: 20,
        size: 52,
        values: (_u, splits) => splits.map((v) => (v >= 10000 ? `${Math.round(v / 1000)}k` : fmt(v))),
        grid: { stroke: '#edf0f3' },
      },
    ],
    series: [
      {},
      ...OUTCOMES.map((o) => o)
        .reverse()
        .map((o) => ({
          label: o.label,
          fill: o.color,
          stroke: o.color,
          width: 0,
          paths: bars,
          points: { show: false },
        })),
    ],
    hooks: { setCursor: [(u: uPlot) => onCursor(u.cursor.idx ?? null)] },
  };
}

/** The stacked totals uPlot draws: the top outcome's total first, as the series are ordered. */
function stacked(s: Series): uPlot.AlignedData {
  const sums: number[][] = [];
  let run = s.xs.map(() => 0);
  for (const y of s.ys) {
    run = run.map((v, i) => v + y[i]);
    sums.push(run);
  }
  return [s.xs, ...sums.reverse()];
}

function Legend({ s, at }: { s: Series; at: number | null }) {
  const value = (o: number) => (at === null ? s.ys[o].reduce((a, b) => a + b, 0) : s.ys[o][at]);
  const rows = OUTCOMES.map((o, i) => ({ o, n: value(i) }));
  const admitted = rows.filter((r) => r.o.admitted).reduce((a, r) => a + r.n, 0);
  const refused = rows.filter((r) => !r.o.admitted).reduce((a, r) => a + r.n, 0);
  const total = admitted + refused;
  const shown = rows.filter((r) => r.n > 0);
  const codes = Object.entries(s.codes).sort((a, b) => b[1] - a[1]);
  return h(
    'div',
    { class: 'history-legend', 'aria-live': 'polite' },
    h(
      'p',
      { class: 'totals' },
      at === null ? 'The whole period: ' : `${when(s.xs[at])}: `,
      h('b', { class: 'admitted', 'data-testid': 'admitted-total' }, `${fmt(admitted)} admitted`),
      ' · ',
      h('b', { class: 'refused', 'data-testid': 'refused-total' }, `${fmt(refused)} refused`),
      total ? ` (${((refused / total) * 100).toFixed(1)} % refused)` : '',
    ),
    shown.length
      ? h(
          'ul',
          { class: 'series' },
          shown.map(({ o, n }) =>
            h(
              'li',
              { class: o.admitted ? 'admitted' : 'refused' },
              h('span', { class: 'sw', style: { background: o.color } }),
              `${o.label} `,
              h('b', null, fmt(n)),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No requests in this period.'),
    at === null &&
      codes.length > 0 &&
      h('p', { class: 'muted' }, 'Refusal codes: ', codes.map(([c, n]) => `${c} ${fmt(n)}`).join(', ')),
  );
}

/** The uPlot canvas, sized to its card and redrawn when the data or the width changes. */
function Plot({ s, range, onCursor }: { s: Series; range: Range; onCursor: (i: number | null) => void }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const box = el.current!;
    const plot = new uPlot(chartOptions(s, range, Math.max(240, box.clientWidth), onCursor), stacked(s), box);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, box.clientWidth), height: 240 }));
    resize.observe(box);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [s, range]);
  return h('div', { class: 'plot', ref: el });
}

/** The period buttons, the chart and its legend for one history (`path`: the route without query). */
export function HistoryChart({ path, title }: { path: string; title: string }) {
  const [range, setRange] = useState<Range>('24h');
  const [at, setAt] = useState<number | null>(null);
  const { granularity, buckets, step } = RANGES[range];
  // The period's first bucket to now, asked again each minute while the page is open.
  const [now, setNow] = useState(() => Math.floor(Date.now() / 1000));
  const from = Math.floor(now / step) * step - (buckets - 1) * step;
  const query = new URLSearchParams({
    from: new Date(from * 1000).toISOString(),
    to: new Date(now * 1000).toISOString(),
    granularity,
  });
  const history = useApi(`${path}?${query}`, [range, now]);
  useEffect(() => {
    const t = setInterval(() => setNow(Math.floor(Date.now() / 1000)), 60_000);
    return () => clearInterval(t);
  }, []);
  const [s, setS] = useState<Series | null>(null);
  useEffect(() => {
    if (history.data) setS(seriesOf(history.data, range, now));
  }, [history.data]);
  return h(
    'section',
    { class: 'card', 'aria-label': title },
    h(
      'div',
      { class: 'row spread' },
      h('h2', null, title),
      h(
        'div',
        { class: 'segmented', role: 'group', 'aria-label': 'Period' },
        (Object.keys(RANGES) as Range[]).map((r) =>
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              'aria-pressed': r === range,
              onClick: () => (setAt(null), setRange(r)),
            },
            r,
          ),
        ),
      ),
    ),
    h(Err, { msg: history.error && `The usage history could not be read: ${history.error}` }),
    s &&
      h(
        'figure',
        {
          class: 'history',
          'data-testid': 'history-chart',
          'aria-label': `${title}, the last ${RANGES[range].label}, per ${granularity}`,
        },
        h(Plot, { s, range, onCursor: setAt }),
        h('figcaption', null, h(Legend, { s, at })),
      ),
    !s && !history.error && h('p', { class: 'muted' }, 'Loading the history…'),
  );
}
