/// <reference lib="dom" />
// The organizations' list, and one organization: its plan, its history by outcome, its live traffic,
// limits, workspaces and keys.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { CreateKey } from './create-key.js';
import { KeysTable } from './keys-table.js';
import { LimitsEditor } from './limits-editor.js';
import { HistoryChart } from './history-chart.js';
import { Err, Ok, Status, Table, TrafficChart, when } from './ui.js';
import { orgWord, useProfile } from './profile.js';

/**
 * The plan picker: the plans of PLANS_FILE (GET /api/plans) with their budgets; without that route a
 * plan's name typed (the API refuses an unknown one, naming it).
 */
function PlanForm({ current, onSave }: { current: string | null; onSave: (plan: string) => Promise<boolean> }) {
  const plans = useApi('/api/plans');
  const [plan, setPlan] = useState(current ?? '');
  const [saved, setSaved] = useState<string | null>(null);
  const items: Json[] = plans.data?.items ?? [];
  const onInput = (e: Event) => (setSaved(null), setPlan((e.target as HTMLInputElement).value));
  return h(
    'form',
    {
      class: 'row',
      'aria-label': 'Change the plan',
      onSubmit: async (e: Event) => {
        e.preventDefault();
        if (await onSave(plan)) setSaved(`The plan is now ${plan}; the gateways apply it to the next request.`);
      },
    },
    h(
      'label',
      null,
      'Plan',
      items.length
        ? h(
            'select',
            { name: 'plan', value: plan, onChange: onInput },
            items.map((p) =>
              h(
                'option',
                { value: p.id },
                `${p.label ?? p.id} (${p.read}/${p.write}/${p.bulk} per minute${p.monthlyQuota ? `, ${p.monthlyQuota.toLocaleString('en-US')} a month` : ''})`,
              ),
            ),
          )
        : h('input', { name: 'plan', required: true, pattern: '[a-z][a-z0-9_]{0,39}', value: plan, onInput }),
    ),
    h('button', { type: 'submit', disabled: plan === (current ?? '') }, 'Change plan'),
    h(Ok, { msg: saved }),
  );
}

export function Organizations() {
  const [cursor, setCursor] = useState<string | null>(null);
  const { data, error } = useApi(`/api/organizations?limit=50${cursor ? `&cursor=${cursor}` : ''}`, [cursor]);
  // A rest profile's organizations are its consumers (docs/profiles.md).
  const title = useProfile().kind === 'rest' ? 'Consumers' : 'Organizations';
  return h(
    'main',
    null,
    h('h1', null, title),
    h(Err, { msg: error }),
    data &&
      h(
        'section',
        { class: 'card' },
        h(Table, {
          caption: title,
          head: ['Id', 'Name', 'Plan', 'State'],
          rows: data.items.map((o: Json) => [
            o.id,
            h('a', { href: `#/organizations/${o.id}` }, o.name),
            o.plan ?? 'none',
            h(Status, { s: o.paused ? 'paused' : 'active' }),
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
  const profile = useProfile();
  const rest = profile.kind === 'rest';
  const [keysVersion, setKeysVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const o = org.data;
  const change = async (body: Json) => {
    try {
      await api(`/api/organizations/${id}`, { method: 'PATCH', body });
      setError(null);
      org.reload();
      return true;
    } catch (err) {
      setError((err as Error).message);
      return false;
    }
  };
  const write = me.role === 'write';
  return h(
    'main',
    null,
    h('p', null, h('a', { href: '#/organizations' }, rest ? '← Consumers' : '← Organizations')),
    h(Err, { msg: org.error ?? error }),
    o &&
      h(
        'div',
        null,
        h('h1', null, `${o.name} `, h('span', { class: 'muted' }, `${orgWord(profile)} ${o.id}`)),
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
          // Not keyed by the plan: the reload after a change would mount a new form and lose its confirmation.
          write && h(PlanForm, { current: o.plan, onSave: (plan: string) => change({ plan }) }),
        ),
        h(HistoryChart, { path: `/api/organizations/${id}/usage/history`, title: 'Requests by outcome' }),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Limits'),
          h(LimitsEditor, {
            path: `/api/organizations/${id}/limits`,
            quota: true,
            write,
            label: rest ? 'Consumer limits' : 'Organization limits',
          }),
        ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Live: requests per minute, last hour'),
          h(Err, { msg: traffic.error }),
          traffic.data && h(TrafficChart, { points: traffic.data.points }),
        ),
        // A consumer has no workspaces.
        !rest &&
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
