/// <reference lib="dom" />
// Webhook endpoints: the list with each one's state, a new endpoint (its signing secret shown once),
// and one endpoint: enable or disable it, change its URL and event types, rotate its secret, and its
// deliveries (failures first on demand) with a replay button for each.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { Err, Facts, Ok, SecretOnce, Status, Table, when } from './ui.js';

/** The event types an endpoint may subscribe to, as the admin API's own description lists them. */
function useEventTypes(): string[] {
  const doc = useApi('/api/openapi.json');
  const body = doc.data?.paths?.['/api/webhooks']?.post?.requestBody?.content?.['application/json']?.schema;
  const prop = body?.properties?.eventTypes;
  return prop?.items?.enum ?? prop?.items?.anyOf?.flatMap((x: Json) => x.enum ?? (x.const ? [x.const] : [])) ?? [];
}

const typesOf = (w: Json): string[] => w.eventTypes ?? [];

function TypePicker({ all, picked, setPicked }: { all: string[]; picked: string[]; setPicked: (t: string[]) => void }) {
  if (!all.length)
    return h(
      'label',
      null,
      'Event types (comma-separated; empty: every event)',
      h('input', {
        name: 'types',
        value: picked.join(', '),
        onInput: (e: Event) =>
          setPicked(
            (e.target as HTMLInputElement).value
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
          ),
      }),
    );
  return h(
    'fieldset',
    { class: 'scopes' },
    h('legend', null, 'Event types (none picked: every event)'),
    all.map((t) =>
      h(
        'label',
        { class: 'check' },
        h('input', {
          type: 'checkbox',
          name: 'type',
          value: t,
          checked: picked.includes(t),
          onChange: () => setPicked(picked.includes(t) ? picked.filter((x) => x !== t) : [...picked, t]),
        }),
        h('code', null, t),
      ),
    ),
  );
}

function CreateEndpoint({ onCreated }: { onCreated: () => void }) {
  const all = useEventTypes();
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState<string[]>([]);
  const [description, setDescription] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const w = await api('/api/webhooks', {
        method: 'POST',
        body: { url, ...(description ? { description } : {}), eventTypes: types },
      });
      setSecret(w.secret);
      setUrl('');
      setTypes([]);
      setDescription('');
      setError(null);
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  if (secret) return h(SecretOnce, { secret, what: 'endpoint', onDone: () => setSecret(null) });
  return h(
    'form',
    { class: 'stack', onSubmit: submit, 'aria-label': 'Add a webhook endpoint' },
    h(
      'label',
      null,
      'URL',
      h('input', {
        name: 'url',
        type: 'url',
        required: true,
        value: url,
        placeholder: 'https://example.com/keygate-events',
        onInput: (e: Event) => setUrl((e.target as HTMLInputElement).value),
      }),
    ),
    h(
      'label',
      null,
      'Description (optional)',
      h('input', {
        name: 'description',
        value: description,
        maxLength: 500,
        onInput: (e: Event) => setDescription((e.target as HTMLInputElement).value),
      }),
    ),
    h(TypePicker, { all, picked: types, setPicked: setTypes }),
    h('p', { class: 'row' }, h('button', { type: 'submit' }, 'Add endpoint')),
    h(Err, { msg: error }),
  );
}

const enabledOf = (w: Json) => w.enabled !== false;

/** The endpoint's deliveries by status, failures first since they are what needs a look. */
function deliveryCounts(w: Json) {
  const c = w.deliveries ?? {};
  return h(
    'span',
    null,
    h('span', { class: c.failed ? 'status-failed' : '' }, `${c.failed ?? 0} failed`),
    `, ${c.pending ?? 0} pending, ${c.delivered ?? 0} delivered`,
  );
}

export function Webhooks({ me }: { me: Json }) {
  const [version, setVersion] = useState(0);
  const list = useApi('/api/webhooks', [version]);
  return h(
    'main',
    null,
    h('h1', null, 'Webhooks'),
    me.role === 'write' &&
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'New endpoint'),
        h(CreateEndpoint, { onCreated: () => setVersion((v) => v + 1) }),
      ),
    h(
      'section',
      { class: 'card' },
      h(Err, { msg: list.error && `The webhook endpoints could not be read: ${list.error}` }),
      list.data &&
        h(Table, {
          caption: 'Webhook endpoints',
          head: ['Endpoint', 'State', 'Events', 'Deliveries', 'Created'],
          rows: (list.data.items ?? []).map((w: Json) => [
            h('a', { href: `#/webhooks/${w.id}`, class: 'url' }, w.url),
            h(Status, { s: enabledOf(w) ? 'enabled' : 'disabled' }),
            typesOf(w).join(', ') || 'every event',
            deliveryCounts(w),
            when(w.createdAt),
          ]),
        }),
    ),
  );
}

/** The endpoint's deliveries, newest first; failed ones alone on demand; each replayable. */
function Deliveries({ id, write }: { id: string; write: boolean }) {
  const [failed, setFailed] = useState(false);
  const [version, setVersion] = useState(0);
  const list = useApi(`/api/webhooks/${id}/deliveries${failed ? '?status=failed' : ''}`, [failed, version], 10_000);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const replay = async (d: Json) => {
    try {
      await api(`/api/webhooks/${id}/deliveries/${d.id}/replay`, { method: 'POST', body: {} });
      setError(null);
      setDone(`Delivery ${d.id} queued again.`);
      setVersion((v) => v + 1);
    } catch (err) {
      setDone(null);
      setError((err as Error).message);
    }
  };
  return h(
    'section',
    { class: 'card' },
    h('h2', null, 'Deliveries'),
    h(
      'label',
      { class: 'check' },
      h('input', { type: 'checkbox', checked: failed, onChange: () => setFailed(!failed) }),
      'Only failed deliveries',
    ),
    h(Err, { msg: list.error ?? error }),
    h(Ok, { msg: done }),
    list.data &&
      h(Table, {
        caption: 'Deliveries',
        head: ['Event', 'Status', 'Attempts', 'Last answer', 'Next attempt', 'Created', ''],
        rows: (list.data.items ?? []).map((d: Json) => [
          h('span', null, h('code', null, d.eventType), h('br', null), h('span', { class: 'muted' }, d.messageId)),
          h(Status, { s: d.status }),
          d.attempts ?? '—',
          d.lastError ?? (d.lastStatus ? `HTTP ${d.lastStatus}` : '—'),
          d.status === 'pending'
            ? when(d.nextAttemptAt)
            : d.status === 'delivered'
              ? `delivered ${when(d.deliveredAt)}`
              : '—',
          when(d.createdAt),
          write && d.status !== 'pending'
            ? h('button', { class: 'secondary', onClick: () => replay(d) }, 'Replay')
            : d.replayOf
              ? `replay of ${d.replayOf}`
              : '',
        ]),
      }),
  );
}

export function Webhook({ id, me }: { id: string; me: Json }) {
  // Polled with the deliveries below, so its counts by status follow them.
  const w = useApi(`/api/webhooks/${id}`, [], 10_000);
  const all = useEventTypes();
  const [types, setTypes] = useState<string[] | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const write = me.role === 'write';
  const d = w.data;
  const change = async (path: string, method: 'PATCH' | 'POST', body: Json, what: string) => {
    try {
      const r = await api(path, { method, body });
      if (r?.secret) setSecret(r.secret);
      setError(null);
      setSaved(what);
      w.reload();
    } catch (err) {
      setSaved(null);
      setError((err as Error).message);
    }
  };
  return h(
    'main',
    null,
    h('p', null, h('a', { href: '#/webhooks' }, '← Webhooks')),
    h(Err, { msg: w.error ?? error }),
    d &&
      h(
        'div',
        null,
        h('h1', null, 'Endpoint ', h('span', { class: 'muted url' }, d.url)),
        h(
          'section',
          { class: 'card' },
          h(Facts, {
            items: [
              ['State', h(Status, { s: enabledOf(d) ? 'enabled' : 'disabled' })],
              ['URL', h('code', { class: 'url' }, d.url)],
              ['Events', typesOf(d).join(', ') || 'every event'],
              ['Deliveries', deliveryCounts(d)],
              ['Secret', h('code', null, d.secretHint)],
              ['Description', d.description || '—'],
              ['Created', when(d.createdAt)],
            ],
          }),
          secret && h(SecretOnce, { secret, what: 'endpoint', onDone: () => setSecret(null) }),
          write &&
            h(
              'p',
              { class: 'row' },
              h(
                'button',
                {
                  class: enabledOf(d) ? 'danger' : '',
                  onClick: () =>
                    change(
                      `/api/webhooks/${id}`,
                      'PATCH',
                      { enabled: !enabledOf(d) },
                      enabledOf(d) ? 'Disabled.' : 'Enabled.',
                    ),
                },
                enabledOf(d) ? 'Disable' : 'Enable',
              ),
              h(
                'button',
                {
                  class: 'secondary',
                  onClick: () =>
                    change(`/api/webhooks/${id}/rotate-secret`, 'POST', {}, 'A new secret: the old one stops now.'),
                },
                'Rotate secret',
              ),
            ),
          write &&
            h(
              'form',
              {
                class: 'stack',
                'aria-label': 'Event types',
                onSubmit: (e: Event) => (
                  e.preventDefault(),
                  change(`/api/webhooks/${id}`, 'PATCH', { eventTypes: types ?? typesOf(d) }, 'Event types saved.')
                ),
              },
              h(TypePicker, { all, picked: types ?? typesOf(d), setPicked: setTypes }),
              h('p', null, h('button', { type: 'submit', class: 'secondary' }, 'Save event types')),
            ),
          h(Ok, { msg: saved }),
        ),
        h(Deliveries, { id, write }),
      ),
  );
}
