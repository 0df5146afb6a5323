/// <reference lib="dom" />
// One key: its fields, rotate, expire and revoke (each confirmed), its history by outcome, its live
// usage, its name, expiry and metadata editor, and its limits.
import { h, type Ref } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { LimitsEditor } from './limits-editor.js';
import { HistoryChart } from './history-chart.js';
import { KeyEdit } from './key-edit.js';
import { Err, Facts, Meter, SecretOnce, Status, when } from './ui.js';

type Change = 'revoke' | 'expire' | 'rotate';

const CONFIRM = {
  revoke: ['Revoke this key? Its next request is refused.', 'Confirm revoke'],
  expire: ['Expire this key now? Its secrets are refused from now on.', 'Confirm expire'],
  rotate: ['Rotate this key? A new secret is shown once; the old one keeps working for a day.', 'Confirm rotate'],
} as const;

/** The key's fields, a secret a rotation just made, and the change buttons (each confirmed). */
function keyCard({
  k,
  me,
  secret,
  setSecret,
  confirm,
  setConfirm,
  confirmRef,
  act,
}: {
  k: Json;
  me: Json;
  secret: string | null;
  setSecret: (s: string | null) => void;
  confirm: Change | null;
  setConfirm: (c: Change | null) => void;
  confirmRef: Ref<HTMLButtonElement>;
  act: (what: Change) => Promise<void>;
}) {
  return h(
    'section',
    { class: 'card' },
    h(Facts, {
      items: [
        ['Status', h(Status, { s: k.status })],
        ['Type', k.type],
        ['Hint', h('code', null, k.hint)],
        ['Organization', h('a', { href: `#/organizations/${k.organizationId}` }, String(k.organizationId))],
        ['Workspace', k.workspaceId ?? '—'],
        ['Role', k.role ?? '—'],
        ['Scopes', k.scopes.join(', ') || '—'],
        ['Created', when(k.createdAt)],
        ['Expires', when(k.expiresAt)],
        ['Last use', when(k.lastUsedAt)],
        ['Metadata', k.metadata ? h('pre', null, JSON.stringify(k.metadata, null, 1)) : '—'],
      ],
    }),
    k.previousSecret &&
      h(
        'p',
        { class: 'muted' },
        `The replaced secret ${k.previousSecret.hint} works until ${when(k.previousSecret.expiresAt)}.`,
      ),
    secret && h(SecretOnce, { secret, what: 'rotated key', onDone: () => setSecret(null) }),
    me.role === 'write' &&
      k.status !== 'revoked' &&
      h(
        'p',
        { class: 'row' },
        confirm
          ? [
              h('span', null, CONFIRM[confirm][0]),
              h('button', { class: 'danger', ref: confirmRef, onClick: () => act(confirm) }, CONFIRM[confirm][1]),
              h('button', { class: 'secondary', onClick: () => setConfirm(null) }, 'Cancel'),
            ]
          : [
              h('button', { class: 'secondary', onClick: () => setConfirm('rotate') }, 'Rotate'),
              k.status === 'active' &&
                h('button', { class: 'secondary', onClick: () => setConfirm('expire') }, 'Expire now'),
              h('button', { class: 'danger', onClick: () => setConfirm('revoke') }, 'Revoke'),
            ],
      ),
  );
}

/** The key's usage this minute and month (polled), and the client address whose IP layer it shows. */
function usageCard(
  usage: { data: Json; error: string | null },
  ip: string,
  setIp: (ip: string) => void,
  setIpQuery: (ip: string) => void,
) {
  const u = usage.data;
  return h(
    'section',
    { class: 'card', 'aria-live': 'polite' },
    h('h2', null, 'Live usage'),
    h(Err, { msg: usage.error }),
    u &&
      h(
        'div',
        null,
        h(
          'div',
          { class: 'meters' },
          Object.entries(u.buckets).map(([n, s]) => h(Meter, { name: n, s })),
          u.ip && h(Meter, { name: `IP ${u.ip.address}`, s: u.ip }),
          u.monthlyQuota && h(Meter, { name: 'month', s: u.monthlyQuota, period: 'this month' }),
        ),
        h(
          'p',
          { class: 'muted' },
          `Plan ${u.plan}. The minute resets at ${when(u.windowReset)}. Monthly quota: `,
          u.monthlyQuota
            ? `${u.monthlyQuota.used} of ${u.monthlyQuota.limit} used, renews ${when(u.monthlyQuota.reset)}`
            : 'none for this organization',
          `. Last use: ${when(u.lastUsedAt)}.`,
        ),
      ),
    h(
      'form',
      { class: 'row', onSubmit: (e: Event) => (e.preventDefault(), setIpQuery(ip.trim())) },
      h(
        'label',
        null,
        'Client address (IP layer)',
        h('input', {
          value: ip,
          placeholder: '203.0.113.7',
          onInput: (e: Event) => setIp((e.target as HTMLInputElement).value),
        }),
      ),
      h('button', { type: 'submit', class: 'secondary' }, 'Show'),
    ),
  );
}

export function Key({ id, me }: { id: string; me: Json }) {
  const key = useApi(`/api/keys/${id}`);
  const [ip, setIp] = useState('');
  const [ipQuery, setIpQuery] = useState('');
  const usage = useApi(`/api/keys/${id}/usage${ipQuery ? `?ip=${encodeURIComponent(ipQuery)}` : ''}`, [ipQuery], 3_000);
  // One pending change at a time, confirmed by a second button that takes the focus.
  const [confirm, setConfirm] = useState<Change | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => confirmRef.current?.focus(), [confirm]);
  const k = key.data;
  const act = async (what: Change) => {
    try {
      const r = await api(`/api/keys/${id}/${what}`, { method: 'POST', ...(what === 'revoke' ? {} : { body: {} }) });
      if (what === 'rotate') setSecret(r.secret);
      setConfirm(null);
      setError(null);
      key.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return h(
    'main',
    null,
    k && h('p', null, h('a', { href: `#/organizations/${k.organizationId}` }, '← Organization')),
    h(Err, { msg: key.error ?? error }),
    k &&
      h(
        'div',
        null,
        h('h1', null, `Key ${k.name} `, h('span', { class: 'muted' }, `#${k.id}`)),
        keyCard({ k, me, secret, setSecret, confirm, setConfirm, confirmRef, act }),
        h(HistoryChart, { path: `/api/keys/${id}/usage/history`, title: 'Requests by outcome' }),
        usageCard(usage, ip, setIp, setIpQuery),
        me.role === 'write' &&
          k.status !== 'revoked' &&
          h(
            'section',
            { class: 'card' },
            h('h2', null, 'Name, expiry and metadata'),
            h(KeyEdit, { key: `${k.name}|${k.expiresAt}|${JSON.stringify(k.metadata)}`, k, onSaved: key.reload }),
          ),
        h(
          'section',
          { class: 'card' },
          h('h2', null, 'Limits'),
          k.type === 'partner'
            ? h('p', { class: 'muted' }, "A /v1 partner key has the contract's fixed 20 requests per minute.")
            : h(LimitsEditor, {
                path: `/api/keys/${id}/limits`,
                quota: false,
                write: me.role === 'write' && k.status !== 'revoked',
                label: 'Key limits',
              }),
        ),
      ),
  );
}
