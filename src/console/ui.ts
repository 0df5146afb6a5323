/// <reference lib="dom" />
// The pieces every page shows: times, errors, statuses, tables, the traffic chart, a secret shown
// once and a usage meter.
import { h, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Json } from './api.js';

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * The console's one date format: `2026-12-04 18:15 UTC` (ISO 8601's order, 24 hours, UTC), for every
 * time a page shows and the charts' axes alike; the history's buckets and the monthly quota are UTC.
 */
export function when(t: string | number | Date | null | undefined): string {
  if (t === null || t === undefined || t === '') return '—';
  const d = t instanceof Date ? t : new Date(typeof t === 'number' && t < 1e12 ? t * 1000 : t);
  if (Number.isNaN(d.getTime())) return String(t);
  return `${day(d)} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

/** The date part of that format: `2026-12-04`. */
export const day = (d: Date) => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;

/** An instant as a text field shows it, in the same format without the zone: `2026-12-04 18:15`. */
export const toUtcField = (iso: string | null | undefined) =>
  iso ? new Date(iso).toISOString().slice(0, 16).replace('T', ' ') : '';

/**
 * A text field's instant, read as UTC: `2026-12-04 18:15` or a date alone (its midnight); empty is
 * none (null); anything else is undefined, for the form to refuse. A browser's date picker would show
 * its locale's format, not the console's one.
 */
export function fromUtcField(v: string): string | null | undefined {
  const t = v.trim();
  if (!t) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}))?$/.exec(t);
  if (!m) return undefined;
  const [y, mo, d, hh = '00', mm = '00'] = m.slice(1);
  const at = new Date(Date.UTC(+y, +mo - 1, +d, +hh, +mm));
  // Date.UTC rolls 2026-02-31 over to March: a date that does not exist is refused instead.
  if (at.getUTCDate() !== +d || at.getUTCHours() !== +hh || at.getUTCMinutes() !== +mm) return undefined;
  return at.toISOString();
}

export const UTC_FIELD_ERROR = 'Write the expiry as 2027-01-31 23:59 (UTC), a date alone, or leave it empty for never.';

/** The expiry field of the key forms: text in the console's date format, UTC. */
export function ExpiryField({ value, onInput }: { value: string; onInput: (e: Event) => void }) {
  return h(
    'label',
    null,
    'Expires (UTC; empty: never)',
    h('input', {
      name: 'expiresAt',
      value,
      placeholder: 'YYYY-MM-DD HH:MM',
      pattern: '\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2})?',
      inputMode: 'numeric',
      autocomplete: 'off',
      onInput,
    }),
  );
}

export const Err = ({ msg }: { msg: string | null | undefined }) =>
  msg ? h('p', { class: 'error', role: 'alert' }, msg) : null;
export const Status = ({ s }: { s: string }) => h('span', { class: `status-${s}` }, s);
export const Ok = ({ msg }: { msg: string | null | undefined }) => (msg ? h('p', { role: 'status' }, msg) : null);

/** A table; on a phone each row becomes a card of labelled values (app.css), so none scrolls sideways. */
export function Table({ head, rows, caption }: { head: string[]; rows: ComponentChildren[][]; caption: string }) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      null,
      h('caption', { class: 'visually-hidden' }, caption),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          head.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        null,
        rows.length
          ? rows.map((r) =>
              h(
                'tr',
                null,
                r.map((c, i) => h('td', { 'data-label': head[i] || undefined }, c)),
              ),
            )
          : h('tr', null, h('td', { colSpan: head.length, class: 'muted' }, 'Nothing here.')),
      ),
    ),
  );
}

/** Label and value pairs that wrap on a narrow screen (a one-row table would scroll sideways). */
export function Facts({ items }: { items: [string, ComponentChildren][] }) {
  return h(
    'dl',
    { class: 'facts' },
    items.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))),
  );
}

export function TrafficChart({ points }: { points: Json[] }) {
  const W = 600;
  const H = 160;
  const max = Math.max(1, ...points.map((p) => p.accepted + p.refused));
  const bw = W / points.length;
  const acc = points.reduce((n, p) => n + p.accepted, 0);
  const ref = points.reduce((n, p) => n + p.refused, 0);
  const label = `Requests per minute over the last hour: ${acc} accepted, ${ref} refused; busiest minute ${max}.`;
  return h(
    'figure',
    { style: { margin: 0 } },
    h(
      'svg',
      { class: 'chart', viewBox: `0 0 ${W} ${H + 18}`, role: 'img', 'aria-label': label },
      points.map((p, i) => {
        const ha = (p.accepted / max) * H;
        const hr = (p.refused / max) * H;
        return h(
          'g',
          null,
          h('rect', { class: 'acc', x: i * bw + 1, y: H - ha, width: bw - 2, height: ha }),
          h('rect', { class: 'ref', x: i * bw + 1, y: H - ha - hr, width: bw - 2, height: hr }),
          h('title', null, `${when(p.minute)}: ${p.accepted} accepted, ${p.refused} refused`),
        );
      }),
      h('line', { x1: 0, x2: W, y1: H + 0.5, y2: H + 0.5, stroke: '#9aa5b1' }),
      h('text', { x: 0, y: H + 15, 'font-size': 11, fill: '#5b6673' }, '-60 min'),
      h('text', { x: W, y: H + 15, 'font-size': 11, fill: '#5b6673', 'text-anchor': 'end' }, 'now'),
      h('text', { x: 2, y: 11, 'font-size': 11, fill: '#5b6673' }, `${max}/min`),
    ),
    h(
      'figcaption',
      { class: 'legend' },
      h('span', null, h('span', { class: 'sw acc' }), `accepted (${acc})`),
      h('span', null, h('span', { class: 'sw ref' }), `refused (${ref})`),
    ),
  );
}

export function SecretOnce({ secret, what, onDone }: { secret: string; what: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return h(
    'div',
    { class: 'secret', role: 'status' },
    h('strong', null, `The ${what}'s secret, shown only this once:`),
    h('code', { 'data-testid': 'secret' }, secret),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'button', onClick: copy }, copied ? 'Copied' : 'Copy'),
      h('button', { type: 'button', class: 'secondary', onClick: onDone }, 'I have saved it'),
    ),
  );
}

export function Meter({ name, s, period = 'this minute' }: { name: string; s: Json; period?: string }) {
  const pct = Math.min(100, Math.round((s.used / Math.max(1, s.limit)) * 100));
  return h(
    'div',
    { class: 'meter', 'data-testid': `meter-${name}` },
    h('div', { class: 'muted' }, name),
    h('b', { 'data-testid': `used-${name}` }, s.used),
    ` / ${s.limit} ${period}`,
    h(
      'div',
      {
        class: 'bar',
        role: 'progressbar',
        'aria-label': `${name} used`,
        'aria-valuemin': 0,
        'aria-valuemax': s.limit,
        'aria-valuenow': s.used,
      },
      h('span', { style: { width: `${pct}%` } }),
    ),
  );
}
