/// <reference lib="dom" />
// The form that makes a key of an organization, of a key type of the profile (GET /api/profile: workspace,
// personal or partner; a rest profile's consumer types), with its expiry, metadata and scopes picked from
// the route table's (GET /api/scopes), and shows its secret once.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { metadataOf } from './key-edit.js';
import { Err, ExpiryField, fromUtcField, SecretOnce, UTC_FIELD_ERROR } from './ui.js';
import { typeLabel, useProfile } from './profile.js';

const ROLE_RANK = ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER', 'ORG_OWNER'];

/**
 * The scopes to pick from: the route table's with their least role; without that route (an older
 * admin API) the scopes the organization's keys already hold.
 */
function useScopes(orgId: number): { items: { scope: string; minRole: string | null }[]; derived: boolean } {
  const table = useApi('/api/scopes');
  const keys = useApi(table.error ? `/api/keys?organization=${orgId}&limit=200` : null, [table.error]);
  if (table.data) {
    const items = (table.data.items ?? []).map((s: Json) => ({ scope: s.scope ?? s.name, minRole: s.minRole ?? null }));
    return { items, derived: false };
  }
  const seen = new Set<string>();
  for (const k of keys.data?.items ?? []) for (const s of k.scopes) seen.add(s);
  return { items: [...seen].sort().map((scope) => ({ scope, minRole: null })), derived: true };
}

function ScopePicker({
  scopes,
  role,
  picked,
  setPicked,
}: {
  scopes: ReturnType<typeof useScopes>;
  role: string | null;
  picked: Set<string>;
  setPicked: (s: Set<string>) => void;
}) {
  const toggle = (s: string) => {
    const next = new Set(picked);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setPicked(next);
  };
  return h(
    'fieldset',
    { class: 'scopes' },
    h('legend', null, 'Scopes', scopes.derived ? ' (those of this organization’s keys)' : ' (from the route table)'),
    scopes.items.length === 0 && h('p', { class: 'muted' }, 'No scope to pick.'),
    scopes.items.map(({ scope, minRole }) => {
      // A workspace key's role must reach the scope's least role; the service layer refuses it otherwise.
      const tooLow = role !== null && minRole !== null && ROLE_RANK.indexOf(minRole) > ROLE_RANK.indexOf(role);
      return h(
        'label',
        { class: 'check', title: minRole ? `needs the role ${minRole}` : undefined },
        h('input', {
          type: 'checkbox',
          name: 'scope',
          value: scope,
          checked: picked.has(scope) && !tooLow,
          disabled: tooLow,
          onChange: () => toggle(scope),
        }),
        h('code', null, scope),
        minRole && h('span', { class: 'muted' }, ` ${minRole}`),
      );
    }),
  );
}

export function CreateKey({ org, workspaces, onCreated }: { org: Json; workspaces: Json[]; onCreated: () => void }) {
  const profile = useProfile();
  const [picking, setType] = useState('');
  const rule = profile.keyTypes.find((t) => t.name === picking) ?? profile.keyTypes[0];
  const type = rule.name;
  const [name, setName] = useState('');
  const [ws, setWs] = useState(String(workspaces[0]?.id ?? ''));
  const [user, setUser] = useState('');
  const [role, setRole] = useState('ADMIN');
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const [expires, setExpires] = useState('');
  const [meta, setMeta] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const scopes = useScopes(org.id);
  const val = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  const submit = async (e: Event) => {
    e.preventDefault();
    const m = metadataOf(meta);
    if ('error' in m) return setError(m.error);
    const allowed = new Set(scopes.items.map((s) => s.scope));
    const list = [...picked].filter((s) => allowed.has(s));
    const body: Json = { type, name };
    if (rule.binding === 'workspace') Object.assign(body, { workspaceId: Number(ws), role });
    if (rule.binding === 'user') body.userId = Number(user);
    if (rule.binding === 'organization') body.organizationId = org.id;
    if (rule.scopes) body.scopes = list;
    const at = fromUtcField(expires);
    if (at === undefined) return setError(UTC_FIELD_ERROR);
    if (at) body.expiresAt = at;
    if (m.value) body.metadata = m.value;
    try {
      const k = await api('/api/keys', { method: 'POST', body });
      setSecret(k.secret);
      setError(null);
      setName('');
      setMeta('');
      setExpires('');
      setPicked(new Set());
      onCreated();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  if (secret) return h(SecretOnce, { secret, what: 'new key', onDone: () => setSecret(null) });
  const select = (label: string, value: string, set: (v: string) => void, options: [string, string][]) =>
    h(
      'label',
      null,
      label,
      h(
        'select',
        { value, onChange: val(set) },
        options.map(([v, t]) => h('option', { value: v }, t)),
      ),
    );
  return h(
    'form',
    { class: 'stack create-key', onSubmit: submit, 'aria-label': 'Create a key' },
    h(
      'div',
      { class: 'row' },
      select(
        'Type',
        type,
        setType,
        profile.keyTypes.map((t) => [t.name, typeLabel(t)]),
      ),
      h(
        'label',
        null,
        'Name',
        h('input', { name: 'name', required: true, maxLength: 100, value: name, onInput: val(setName) }),
      ),
      rule.binding === 'workspace' &&
        select(
          'Workspace',
          ws,
          setWs,
          workspaces.map((w) => [String(w.id), `${w.id} ${w.name}`]),
        ),
      rule.binding === 'workspace' &&
        select(
          'Role',
          role,
          setRole,
          ['VIEWER', 'EDITOR', 'ADMIN', 'OWNER'].map((r) => [r, r]),
        ),
      rule.binding === 'user' &&
        h(
          'label',
          null,
          'User id',
          h('input', { inputMode: 'numeric', required: true, value: user, onInput: val(setUser) }),
        ),
      h(ExpiryField, { value: expires, onInput: val(setExpires) }),
    ),
    rule.scopes && h(ScopePicker, { scopes, role: rule.binding === 'workspace' ? role : null, picked, setPicked }),
    h(
      'label',
      null,
      'Metadata (a JSON object; empty: none)',
      h('textarea', {
        name: 'metadata',
        rows: 2,
        spellcheck: false,
        placeholder: '{"customer": "cus_123"}',
        value: meta,
        onInput: val(setMeta),
      }),
    ),
    h('p', { class: 'row' }, h('button', { type: 'submit' }, 'Create key')),
    h(Err, { msg: error }),
  );
}
