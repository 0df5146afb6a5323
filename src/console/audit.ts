/// <reference lib="dom" />
// The audit trail, filtered by organization, action and actor, a page at a time.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, type Json } from './api.js';
import { Err, Table, when } from './ui.js';

export function Audit() {
  const [filters, setFilters] = useState({ organization: '', action: '', actor: '' });
  const [applied, setApplied] = useState(filters);
  const [pages, setPages] = useState<Json[][]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async (cursor: string | null) => {
    const q = new URLSearchParams({ limit: '50' });
    for (const [k, v] of Object.entries(applied)) if (v) q.set(k, v);
    if (cursor) q.set('cursor', cursor);
    try {
      const page = await api(`/api/audit?${q}`);
      setPages((p) => (cursor ? [...p, page.items] : [page.items]));
      setNext(page.nextCursor);
      setError(null);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => void load(null), [applied]);
  const field = (name: keyof typeof filters, label: string, placeholder: string) =>
    h(
      'label',
      null,
      label,
      h('input', {
        name,
        value: filters[name],
        placeholder,
        onInput: (e: Event) => setFilters({ ...filters, [name]: (e.target as HTMLInputElement).value }),
      }),
    );
  const rows = pages.flat();
  return h(
    'main',
    null,
    h('h1', null, 'Audit trail'),
    h(
      'form',
      { class: 'row card', onSubmit: (e: Event) => (e.preventDefault(), setApplied({ ...filters })) },
      field('organization', 'Organization id', '1'),
      field('action', 'Action', 'key.revoke'),
      h(
        'label',
        null,
        'Actor',
        h(
          'select',
          {
            value: filters.actor,
            onChange: (e: Event) => setFilters({ ...filters, actor: (e.target as HTMLSelectElement).value }),
          },
          ['', 'admin-token', 'user', 'cli', 'internal', 'seed', 'api-key'].map((a) =>
            h('option', { value: a }, a || 'any'),
          ),
        ),
      ),
      h('button', { type: 'submit' }, 'Filter'),
    ),
    h(Err, { msg: error }),
    h(
      'section',
      { class: 'card' },
      h(Table, {
        caption: 'Audit events',
        head: ['When', 'Who', 'Action', 'Target', 'Change'],
        rows: rows.map((e: Json) => [
          when(e.at),
          `${e.actor.kind}${e.actor.name ? ` ${e.actor.name}` : ''}${e.actor.id ? ` (${e.actor.id})` : ''}`,
          h('code', null, e.action),
          `${e.targetType} ${e.targetIds.join(', ')}`,
          h(
            'details',
            null,
            h('summary', null, 'before / after'),
            h('pre', null, JSON.stringify({ before: e.before, after: e.after }, null, 1)),
          ),
        ]),
      }),
      next && h('p', null, h('button', { class: 'secondary', onClick: () => load(next) }, 'More')),
    ),
  );
}
