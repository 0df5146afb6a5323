/// <reference lib="dom" />
// The first page: search (organizations and keys by name, id or key hint), then the whole deployment
// at a glance: how many organizations and keys, today's traffic and refusals (UTC day), the monthly
// quotas at 80 % or more, and the keys that expire within 7 days.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { Err, Status, Table, when } from './ui.js';

const fmt = (n: unknown) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');

function Search() {
  const [q, setQ] = useState(() => new URLSearchParams(location.hash.split('?')[1] ?? '').get('q') ?? '');
  const [result, setResult] = useState<Json>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async (text: string) => {
    if (!text.trim()) return setResult(null);
    try {
      setResult(await api(`/api/search?q=${encodeURIComponent(text.trim())}`));
      setError(null);
    } catch (err) {
      setError(`Search failed: ${(err as Error).message}`);
    }
  };
  useEffect(() => void run(q), []);
  const orgs: Json[] = result?.organizations ?? [];
  const keys: Json[] = result?.keys ?? [];
  return h(
    'section',
    { class: 'card' },
    h(
      'form',
      {
        class: 'row',
        role: 'search',
        onSubmit: (e: Event) => (
          e.preventDefault(),
          history.replaceState(null, '', `#/?q=${encodeURIComponent(q)}`),
          run(q)
        ),
      },
      h(
        'label',
        { class: 'grow' },
        'Search organizations and keys',
        h('input', {
          type: 'search',
          name: 'q',
          value: q,
          maxLength: 100,
          placeholder: 'a name, an id or a key hint (svc_ws_AbCd)',
          onInput: (e: Event) => setQ((e.target as HTMLInputElement).value),
        }),
      ),
      h('button', { type: 'submit' }, 'Search'),
    ),
    h(Err, { msg: error }),
    result &&
      h(
        'div',
        { 'data-testid': 'search-results' },
        !orgs.length && !keys.length && h('p', { class: 'muted' }, `Nothing matches “${q}”.`),
        orgs.length > 0 &&
          h(Table, {
            caption: 'Organizations found',
            head: ['Organization', 'Id', 'Plan', 'State'],
            rows: orgs.map((o) => [
              h('a', { href: `#/organizations/${o.id}` }, o.name),
              o.id,
              o.plan ?? 'none',
              h(Status, { s: o.paused ? 'paused' : 'active' }),
            ]),
          }),
        keys.length > 0 &&
          h(Table, {
            caption: 'Keys found',
            head: ['Key', 'Id', 'Hint', 'Organization', 'Status'],
            rows: keys.map((k) => [
              h('a', { href: `#/keys/${k.id}` }, k.name),
              k.id,
              h('code', null, k.hint),
              h('a', { href: `#/organizations/${k.organizationId}` }, k.organizationName ?? k.organizationId),
              h(Status, { s: k.status }),
            ]),
          }),
      ),
  );
}

function Stat({ label, value, tone }: { label: string; value: unknown; tone?: string }) {
  return h(
    'div',
    { class: `stat ${tone ?? ''}` },
    h('div', { class: 'muted' }, label),
    h('b', { 'data-testid': `stat-${label}` }, fmt(value)),
  );
}

const REFUSED_BY: Record<string, string> = {
  limited_key: "the key's rate limit",
  limited_address: "the client address's rate limit",
  limited_month: 'the monthly quota',
};
/** What an outcome of refusal means, in words beside its name. */
const refusedBy = (o: string) =>
  REFUSED_BY[o] ?? (o.startsWith('refused_') ? `refused with ${o.slice('refused_'.length)}` : o);

/** Today's refusals by what refused them, biggest first. */
function refusalsOf(today: Json): [string, number][] {
  const by: Record<string, number> = today?.byOutcome ?? today?.outcomes ?? today?.counts ?? {};
  return Object.entries(by)
    .filter(([o, n]) => typeof n === 'number' && n > 0 && (o.startsWith('refused_') || o.startsWith('limited_')))
    .sort((a, b) => b[1] - a[1]);
}

export function Overview() {
  const { data: o, error } = useApi('/api/overview', [], 30_000);
  const counts = o?.counts ?? o ?? {};
  const today = o?.today ?? {};
  const quotas: Json[] = o?.quotas ?? o?.quotasNearLimit ?? [];
  const expiring: Json[] = o?.expiringKeys ?? o?.keysExpiring ?? [];
  const refusals = refusalsOf(today);
  return h(
    'main',
    null,
    h('h1', null, 'Overview'),
    h(Search, null),
    h(Err, { msg: error && `The overview could not be read: ${error}` }),
    o &&
      h(
        'div',
        null,
        h(
          'section',
          { class: 'card stats', 'aria-label': 'Counts' },
          h(Stat, { label: 'organizations', value: counts.organizations?.total ?? counts.organizations }),
          h(Stat, { label: 'active keys', value: counts.keys?.active ?? counts.activeKeys }),
          h(Stat, { label: 'admitted today', value: today.admitted, tone: 'admitted' }),
          h(Stat, { label: 'refused today', value: today.refused, tone: 'refused' }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Refusals today (UTC)'),
          refusals.length
            ? h(Table, {
                caption: 'Refusals today',
                head: ['Refused by', 'Requests'],
                rows: refusals.map(([what, n]) => [
                  h('span', null, refusedBy(what), ' ', h('code', { class: 'muted' }, what)),
                  fmt(n),
                ]),
              })
            : h('p', { class: 'muted' }, 'No request refused today.'),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Monthly quotas at 80 % or more'),
          h(Table, {
            caption: 'Monthly quotas at 80 % or more',
            head: ['Organization', 'Used', 'Quota', 'Share'],
            rows: quotas.map((q) => {
              const pct = q.percent ?? Math.round((q.used / Math.max(1, q.limit)) * 100);
              return [
                h(
                  'a',
                  { href: `#/organizations/${q.organizationId}` },
                  q.name ?? q.organizationName ?? q.organizationId,
                ),
                fmt(q.used),
                fmt(q.limit),
                h('span', { class: pct >= 100 ? 'status-revoked' : 'status-warn' }, `${pct} %`),
              ];
            }),
          }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Keys expiring within 7 days'),
          h(Table, {
            caption: 'Keys expiring within 7 days',
            head: ['Key', 'Hint', 'Organization', 'Expires'],
            rows: expiring.map((k) => [
              h('a', { href: `#/keys/${k.id}` }, k.name),
              h('code', null, k.hint ?? '—'),
              h('a', { href: `#/organizations/${k.organizationId}` }, k.organizationName ?? k.organizationId),
              when(k.expiresAt),
            ]),
          }),
        ),
      ),
  );
}
