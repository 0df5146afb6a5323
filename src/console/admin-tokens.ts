/// <reference lib="dom" />
// Admin tokens: the list (revoked ones on demand), a new token with its secret shown once, and revoke
// (confirmed; the token the console is signed in with says so before it signs itself out).
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { Err, SecretOnce, Status, Table, when } from './ui.js';

function CreateToken({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState('read');
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const t = await api('/api/admin-tokens', { method: 'POST', body: { name, role } });
      setSecret(t.token);
      setName('');
      setError(null);
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  if (secret) return h(SecretOnce, { secret, what: 'new admin token', onDone: () => setSecret(null) });
  return h(
    'form',
    { class: 'row', onSubmit: submit, 'aria-label': 'Create an admin token' },
    h(
      'label',
      null,
      'Name',
      h('input', {
        name: 'name',
        required: true,
        maxLength: 100,
        value: name,
        placeholder: 'alice',
        onInput: (e: Event) => setName((e.target as HTMLInputElement).value),
      }),
    ),
    h(
      'label',
      null,
      'Role',
      h(
        'select',
        { value: role, onChange: (e: Event) => setRole((e.target as HTMLSelectElement).value) },
        h('option', { value: 'read' }, 'read: every GET'),
        h('option', { value: 'write' }, 'write: also changes'),
      ),
    ),
    h('button', { type: 'submit' }, 'Create token'),
    h(Err, { msg: error }),
  );
}

export function AdminTokens({ me }: { me: Json }) {
  const [all, setAll] = useState(false);
  const [version, setVersion] = useState(0);
  const tokens = useApi(`/api/admin-tokens${all ? '?all=true' : ''}`, [all, version]);
  const [confirm, setConfirm] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const write = me.role === 'write';
  const revoke = async (id: number) => {
    try {
      await api(`/api/admin-tokens/${id}/revoke`, { method: 'POST' });
      setConfirm(null);
      setError(null);
      setVersion((v) => v + 1);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const action = (t: Json) => {
    if (!write || t.revokedAt) return '';
    if (confirm !== t.id) return h('button', { class: 'danger', onClick: () => setConfirm(t.id) }, 'Revoke');
    return h(
      'span',
      { class: 'row' },
      t.id === me.id ? 'This is your token: you will be signed out.' : '',
      h('button', { class: 'danger', onClick: () => revoke(t.id) }, `Confirm revoke ${t.name}`),
      h('button', { class: 'secondary', onClick: () => setConfirm(null) }, 'Cancel'),
    );
  };
  return h(
    'main',
    null,
    h('h1', null, 'Admin tokens'),
    write &&
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'New token'),
        h(CreateToken, { onCreated: () => setVersion((v) => v + 1) }),
      ),
    h(
      'section',
      { class: 'card' },
      h(
        'label',
        { class: 'check' },
        h('input', { type: 'checkbox', checked: all, onChange: () => setAll(!all) }),
        'Show revoked tokens',
      ),
      h(Err, { msg: tokens.error ?? error }),
      tokens.data &&
        h(Table, {
          caption: 'Admin tokens',
          head: ['Name', 'Role', 'Hint', 'Status', 'Created', 'Last use', ''],
          rows: tokens.data.items.map((t: Json) => [
            t.id === me.id ? h('span', null, t.name, h('span', { class: 'muted' }, ' (you)')) : t.name,
            t.role,
            h('code', null, t.hint),
            h(Status, { s: t.revokedAt ? 'revoked' : 'active' }),
            when(t.createdAt),
            when(t.lastUsedAt),
            action(t),
          ]),
        }),
    ),
  );
}
