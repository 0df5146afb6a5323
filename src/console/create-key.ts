/// <reference lib="dom" />
// The form that makes a key of an organization (workspace, personal or partner) and shows its secret once.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Json } from './api.js';
import { Err, SecretOnce } from './ui.js';

export function CreateKey({ org, workspaces, onCreated }: { org: Json; workspaces: Json[]; onCreated: () => void }) {
  const [type, setType] = useState('workspace');
  const [name, setName] = useState('');
  const [ws, setWs] = useState(String(workspaces[0]?.id ?? ''));
  const [user, setUser] = useState('');
  const [role, setRole] = useState('ADMIN');
  const [scopes, setScopes] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const val = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  const submit = async (e: Event) => {
    e.preventDefault();
    const list = scopes
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const body: Json = { type, name };
    if (type === 'workspace') Object.assign(body, { workspaceId: Number(ws), role, scopes: list });
    if (type === 'personal') Object.assign(body, { userId: Number(user), scopes: list });
    if (type === 'partner') body.organizationId = org.id;
    try {
      const k = await api('/api/keys', { method: 'POST', body });
      setSecret(k.secret);
      setError(null);
      setName('');
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  if (secret) return h(SecretOnce, { secret, what: 'new key', onDone: () => setSecret(null) });
  return h(
    'form',
    { class: 'row', onSubmit: submit, 'aria-label': 'Create a key' },
    h(
      'label',
      null,
      'Type',
      h(
        'select',
        { value: type, onChange: val(setType) },
        ['workspace', 'personal', 'partner'].map((t) => h('option', { value: t }, t)),
      ),
    ),
    h(
      'label',
      null,
      'Name',
      h('input', { name: 'name', required: true, maxLength: 100, value: name, onInput: val(setName) }),
    ),
    type === 'workspace' &&
      h(
        'label',
        null,
        'Workspace',
        h(
          'select',
          { value: ws, onChange: val(setWs) },
          workspaces.map((w) => h('option', { value: String(w.id) }, `${w.id} ${w.name}`)),
        ),
      ),
    type === 'workspace' &&
      h(
        'label',
        null,
        'Role',
        h(
          'select',
          { value: role, onChange: val(setRole) },
          ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER'].map((r) => h('option', { value: r }, r)),
        ),
      ),
    type === 'personal' &&
      h(
        'label',
        null,
        'User id',
        h('input', { inputMode: 'numeric', required: true, value: user, onInput: val(setUser) }),
      ),
    type !== 'partner' &&
      h(
        'label',
        null,
        'Scopes (comma-separated)',
        h('input', { name: 'scopes', value: scopes, placeholder: 'accounts:read', onInput: val(setScopes) }),
      ),
    h('button', { type: 'submit' }, 'Create key'),
    h(Err, { msg: error }),
  );
}
