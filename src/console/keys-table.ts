/// <reference lib="dom" />
// An organization's keys, filtered by status, each linking to its page.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { useApi, type Json } from './api.js';
import { Err, Status, Table, when } from './ui.js';
import { useProfile } from './profile.js';

export function KeysTable({ query }: { query: string }) {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const profile = useProfile();
  const [cursor, setCursor] = useState<string | null>(null);
  const { data, error } = useApi(
    `/api/keys?${query}${status ? `&status=${status}` : ''}${type ? `&type=${type}` : ''}&limit=50${cursor ? `&cursor=${cursor}` : ''}`,
    [status, type, cursor, query],
  );
  return h(
    'div',
    null,
    h(
      'div',
      { class: 'row', role: 'group', 'aria-label': 'Key filters' },
      h(
        'label',
        null,
        'Status',
        h(
          'select',
          {
            value: status,
            onChange: (e: Event) => (setCursor(null), setStatus((e.target as HTMLSelectElement).value)),
          },
          ['', 'active', 'expired', 'revoked'].map((s) => h('option', { value: s }, s || 'any')),
        ),
      ),
      h(
        'label',
        null,
        'Type',
        h(
          'select',
          { value: type, onChange: (e: Event) => (setCursor(null), setType((e.target as HTMLSelectElement).value)) },
          ['', ...profile.keyTypes.map((t) => t.name)].map((s) => h('option', { value: s }, s || 'any')),
        ),
      ),
    ),
    h(Err, { msg: error }),
    data &&
      h(Table, {
        caption: 'Keys',
        head: ['Id', 'Name', 'Type', 'Hint', 'Workspace', 'Status', 'Last use'],
        rows: data.items.map((k: Json) => [
          k.id,
          h('a', { href: `#/keys/${k.id}` }, k.name),
          k.type,
          h('code', null, k.hint),
          k.workspaceId ?? '—',
          h(Status, { s: k.status }),
          when(k.lastUsedAt),
        ]),
      }),
    data?.nextCursor &&
      h('p', null, h('button', { class: 'secondary', onClick: () => setCursor(data.nextCursor) }, 'Next page')),
  );
}
