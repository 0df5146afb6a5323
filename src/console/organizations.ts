/// <reference lib="dom" />
// The organizations' list, and one organization: its traffic, workspaces, keys and limits.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { CreateKey } from './create-key.js';
import { KeysTable } from './keys-table.js';
import { LimitsEditor } from './limits-editor.js';
import { Err, Table, TrafficChart, when } from './ui.js';

export function Organizations() {
  const [cursor, setCursor] = useState<string | null>(null);
  const { data, error } = useApi(`/api/organizations?limit=50${cursor ? `&cursor=${cursor}` : ''}`, [cursor]);
  return h(
    'main',
    null,
    h('h1', null, 'Organizations'),
    h(Err, { msg: error }),
    data &&
      h(
        'section',
        { class: 'card' },
        h(Table, {
          caption: 'Organizations',
          head: ['Id', 'Name', 'Plan', 'State'],
          rows: data.items.map((o: Json) => [
            o.id,
            h('a', { href: `#/organizations/${o.id}` }, o.name),
            o.plan ?? 'none',
            o.paused
              ? h('span', { class: 'status-revoked' }, 'paused')
              : h('span', { class: 'status-active' }, 'active'),
          ]),
        }),
        data.nextCursor &&
          h('p', null, h('button', { class: 'secondary', onClick: () => setCursor(data.nextCursor) }, 'Next page')),
      ),
  );
}

export function Organization({ id, me }: { id: string; me: Json }) {
  const org = useApi(`/api/organizations/${id}`);
  const ws = useApi(`/api/workspaces?organization=${id}&limit=200`);
  const traffic = useApi(`/api/organizations/${id}/traffic`, [], 10_000);
  const [keysVersion, setKeysVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const o = org.data;
  const change = async (body: Json) => {
    try {
      await api(`/api/organizations/${id}`, { method: 'PATCH', body });
      org.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const write = me.role === 'write';
  return h(
    'main',
    null,
    h('p', null, h('a', { href: '#/organizations' }, '← Organizations')),
    h(Err, { msg: org.error ?? error }),
    o &&
      h(
        'div',
        null,
        h('h1', null, `${o.name} `, h('span', { class: 'muted' }, `organization ${o.id}`)),
        h(
          'section',
          { class: 'card' },
          h(
            'p',
            null,
            `Plan: ${o.plan ?? 'none'} · API access: ${o.apiAccess ? 'on' : 'off'} · `,
            o.paused
              ? h('span', { class: 'status-revoked' }, 'paused')
              : h('span', { class: 'status-active' }, 'active'),
          ),
          write &&
            h(
              'button',
              { class: o.paused ? '' : 'danger', onClick: () => change({ paused: !o.paused }) },
              o.paused ? 'Resume' : 'Pause',
            ),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Limits'),
          h(LimitsEditor, {
            path: `/api/organizations/${id}/limits`,
            quota: true,
            write,
            label: 'Organization limits',
          }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Requests per minute, last hour'),
          h(Err, { msg: traffic.error }),
          traffic.data && h(TrafficChart, { points: traffic.data.points }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Workspaces'),
          ws.data &&
            h(Table, {
              caption: 'Workspaces',
              head: ['Id', 'Name', 'Created'],
              rows: ws.data.items.map((w: Json) => [w.id, w.name, when(w.createdAt)]),
            }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Keys'),
          write &&
            ws.data &&
            h(CreateKey, { org: o, workspaces: ws.data.items, onCreated: () => setKeysVersion((v) => v + 1) }),
          h(KeysTable, { key: keysVersion, query: `organization=${id}` }),
        ),
      ),
  );
}
