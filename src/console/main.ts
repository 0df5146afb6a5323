/// <reference lib="dom" />
// The keygate console: a single page over the admin API of the same origin (src/admin-api/), signed in
// with an admin token kept in this tab's sessionStorage. Preact without JSX (h calls), bundled by
// esbuild into app.js (src/console/build.ts); no request leaves the admin listener's origin.
import { h, render, type ComponentChildren, type VNode } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

// The admin API's answers, read by field where they are shown (their shapes are in config/openapi/admin.json).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const TOKEN_KEY = 'keygate.adminToken';

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let signOutHook: () => void = () => {};

async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<Json> {
  const token = sessionStorage.getItem(TOKEN_KEY) ?? '';
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${token}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    cache: 'no-store',
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    if (res.status === 401) signOutHook();
    throw new ApiError(res.status, data?.error?.code ?? 'error', data?.error?.message ?? `HTTP ${res.status}`);
  }
  return data;
}

function useRoute(): string {
  const [hash, setHash] = useState(location.hash || '#/organizations');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/organizations');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.slice(1);
}

/** Load `path` (again whenever `deps` change or `reload` is called); every `everyMs` when given. */
function useApi(path: string | null, deps: unknown[] = [], everyMs?: number) {
  const [state, setState] = useState<{ data: Json; error: string | null; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return;
    let live = true;
    api(path)
      .then((data) => live && setState({ data, error: null, loading: false }))
      .catch((err: Error) => live && setState((s) => ({ data: s.data, error: err.message, loading: false })));
    const timer = everyMs ? setTimeout(() => setTick((t) => t + 1), everyMs) : undefined;
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [path, tick, ...deps]);
  return { ...state, reload: useCallback(() => setTick((t) => t + 1), []) };
}

const when = (t: string | null) => (t ? new Date(t).toLocaleString() : '—');
const Err = ({ msg }: { msg: string | null }) => (msg ? h('p', { class: 'error', role: 'alert' }, msg) : null);
const Status = ({ s }: { s: string }) => h('span', { class: `status-${s}` }, s);

function Table({ head, rows, caption }: { head: string[]; rows: ComponentChildren[][]; caption: string }) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      null,
      h('caption', { class: 'visually-hidden' }, caption),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          head.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        null,
        rows.length
          ? rows.map((r) =>
              h(
                'tr',
                null,
                r.map((c) => h('td', null, c)),
              ),
            )
          : h('tr', null, h('td', { colSpan: head.length, class: 'muted' }, 'Nothing here.')),
      ),
    ),
  );
}

// ------------------------------------------------------------------ sign in

function SignIn({ onSignedIn }: { onSignedIn: (me: Json) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, value.trim());
    try {
      onSignedIn(await api('/api/me'));
    } catch (err) {
      sessionStorage.removeItem(TOKEN_KEY);
      setError((err as Error).message);
    }
  };
  return h(
    'main',
    null,
    h(
      'section',
      { class: 'card signin' },
      h('h1', null, 'Sign in to keygate'),
      h(
        'p',
        { class: 'muted' },
        'Paste an admin token (keygate admin-tokens create --name you --role write). It stays in this browser tab only.',
      ),
      h(
        'form',
        { onSubmit: submit },
        h(
          'label',
          null,
          'Admin token',
          h('input', {
            type: 'password',
            name: 'token',
            autocomplete: 'off',
            required: true,
            value,
            onInput: (e: Event) => setValue((e.target as HTMLInputElement).value),
          }),
        ),
        h('p', null, h('button', { type: 'submit' }, 'Sign in')),
      ),
      h(Err, { msg: error }),
    ),
  );
}

// ------------------------------------------------------------------ organizations

function Organizations() {
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

function TrafficChart({ points }: { points: Json[] }) {
  const W = 600;
  const H = 160;
  const max = Math.max(1, ...points.map((p) => p.accepted + p.refused));
  const bw = W / points.length;
  const acc = points.reduce((n, p) => n + p.accepted, 0);
  const ref = points.reduce((n, p) => n + p.refused, 0);
  const label = `Requests per minute over the last hour: ${acc} accepted, ${ref} refused; busiest minute ${max}.`;
  return h(
    'figure',
    { style: { margin: 0 } },
    h(
      'svg',
      { class: 'chart', viewBox: `0 0 ${W} ${H + 18}`, role: 'img', 'aria-label': label },
      points.map((p, i) => {
        const ha = (p.accepted / max) * H;
        const hr = (p.refused / max) * H;
        return h(
          'g',
          null,
          h('rect', { class: 'acc', x: i * bw + 1, y: H - ha, width: bw - 2, height: ha }),
          h('rect', { class: 'ref', x: i * bw + 1, y: H - ha - hr, width: bw - 2, height: hr }),
          h(
            'title',
            null,
            `${new Date(p.minute * 1000).toLocaleTimeString()}: ${p.accepted} accepted, ${p.refused} refused`,
          ),
        );
      }),
      h('line', { x1: 0, x2: W, y1: H + 0.5, y2: H + 0.5, stroke: '#9aa5b1' }),
      h('text', { x: 0, y: H + 15, 'font-size': 11, fill: '#5b6673' }, '-60 min'),
      h('text', { x: W, y: H + 15, 'font-size': 11, fill: '#5b6673', 'text-anchor': 'end' }, 'now'),
      h('text', { x: 2, y: 11, 'font-size': 11, fill: '#5b6673' }, `${max}/min`),
    ),
    h(
      'figcaption',
      { class: 'legend' },
      h('span', null, h('span', { class: 'sw acc' }), `accepted (${acc})`),
      h('span', null, h('span', { class: 'sw ref' }), `refused (${ref})`),
    ),
  );
}

function SecretOnce({ secret, what, onDone }: { secret: string; what: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return h(
    'div',
    { class: 'secret', role: 'status' },
    h('strong', null, `The ${what}'s secret, shown only this once:`),
    h('code', { 'data-testid': 'secret' }, secret),
    h(
      'div',
      { class: 'row' },
      h('button', { type: 'button', onClick: copy }, copied ? 'Copied' : 'Copy'),
      h('button', { type: 'button', class: 'secondary', onClick: onDone }, 'I have saved it'),
    ),
  );
}

function CreateKey({ org, workspaces, onCreated }: { org: Json; workspaces: Json[]; onCreated: () => void }) {
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

function KeysTable({ query }: { query: string }) {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
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
          ['', 'workspace', 'personal', 'partner'].map((s) => h('option', { value: s }, s || 'any')),
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

// ------------------------------------------------------------------ limits

const LIMIT_FIELDS = [
  ['read', 'Read per minute'],
  ['write', 'Write per minute'],
  ['bulk', 'Bulk per minute'],
] as const;

/** A field's text as the API's value: empty or "plan" is null (the layer above), "none" drops a quota. */
function limitValue(raw: string, quota: boolean): number | 'none' | null | undefined {
  const t = raw.trim().toLowerCase();
  if (t === '' || t === 'plan') return null;
  if (quota && t === 'none') return 'none';
  return /^[1-9][0-9]{0,12}$/.test(t) ? Number(t) : undefined;
}

/**
 * The overrides of a key's or an organization's budgets (and an organization's monthly quota): what it
 * sets itself, what applies; a write token edits them (empty or "plan": back to the layer above).
 */
function LimitsEditor({ path, quota, write, label }: { path: string; quota: boolean; write: boolean; label: string }) {
  const limits = useApi(path);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const l = limits.data;
  const shown = (v: Json) => (v === null || v === undefined ? '' : String(v));
  useEffect(() => {
    if (!l) return;
    const f: Record<string, string> = {};
    for (const [b] of LIMIT_FIELDS) f[b] = shown(l.overrides[b]);
    if (quota) f.monthlyQuota = shown(l.overrides.monthlyQuota);
    setFields(f);
  }, [l]);
  const names: string[] = [...LIMIT_FIELDS.map(([b]) => b), ...(quota ? ['monthlyQuota'] : [])];
  const submit = async (e: Event) => {
    e.preventDefault();
    const body: Json = {};
    for (const n of names) {
      const v = limitValue(fields[n] ?? '', n === 'monthlyQuota');
      if (v === undefined)
        return setError(
          `${n}: a whole number from 1, or empty for the plan's${n === 'monthlyQuota' ? ', or none' : ''}`,
        );
      if (v !== (l.overrides[n] ?? null)) body[n] = v;
    }
    if (!Object.keys(body).length) return setError('Nothing to change.');
    try {
      await api(path, { method: 'PATCH', body });
      setError(null);
      setSaved('Saved: the gateways apply it to the next request.');
      limits.reload();
    } catch (err) {
      setSaved(null);
      setError((err as Error).message);
    }
  };
  // A key without its own override inherits its organization's, else the plan's.
  const source = (n: string) =>
    l.overrides[n] === null || l.overrides[n] === undefined ? (quota ? 'plan' : 'organization or plan') : 'override';
  return h(
    'div',
    null,
    h(Err, { msg: limits.error }),
    l &&
      h(Table, {
        caption: label,
        head: ['Limit', 'Applies', 'From'],
        rows: [
          ...LIMIT_FIELDS.map(([b, text]) => [text, l.effective[b], source(b)]),
          [
            'Monthly quota',
            l.effective.monthlyQuota ?? 'none',
            quota ? (l.overrides.monthlyQuota === null ? 'plan' : 'override') : 'organization',
          ],
        ],
      }),
    l &&
      write &&
      h(
        'form',
        { class: 'row', onSubmit: submit, 'aria-label': label },
        names.map((n) =>
          h(
            'label',
            null,
            n === 'monthlyQuota' ? 'Monthly quota' : LIMIT_FIELDS.find(([b]) => b === n)![1],
            h('input', {
              name: n,
              inputMode: n === 'monthlyQuota' ? 'text' : 'numeric',
              placeholder: n === 'monthlyQuota' ? 'plan, or none' : 'plan',
              value: fields[n] ?? '',
              onInput: (ev: Event) => setFields({ ...fields, [n]: (ev.target as HTMLInputElement).value }),
            }),
          ),
        ),
        h('button', { type: 'submit' }, 'Save limits'),
      ),
    write &&
      l &&
      h('p', { class: 'muted' }, 'Empty or "plan": use the plan\'s (for a key, its organization\'s first).'),
    h(Err, { msg: error }),
    saved && h('p', { role: 'status' }, saved),
  );
}

function Organization({ id, me }: { id: string; me: Json }) {
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

// ------------------------------------------------------------------ one key

function Meter({ name, s, period = 'this minute' }: { name: string; s: Json; period?: string }) {
  const pct = Math.min(100, Math.round((s.used / Math.max(1, s.limit)) * 100));
  return h(
    'div',
    { class: 'meter', 'data-testid': `meter-${name}` },
    h('div', { class: 'muted' }, name),
    h('b', { 'data-testid': `used-${name}` }, s.used),
    ` / ${s.limit} ${period}`,
    h(
      'div',
      {
        class: 'bar',
        role: 'progressbar',
        'aria-label': `${name} used`,
        'aria-valuemin': 0,
        'aria-valuemax': s.limit,
        'aria-valuenow': s.used,
      },
      h('span', { style: { width: `${pct}%` } }),
    ),
  );
}

function Key({ id, me }: { id: string; me: Json }) {
  const key = useApi(`/api/keys/${id}`);
  const [ip, setIp] = useState('');
  const [ipQuery, setIpQuery] = useState('');
  const usage = useApi(`/api/keys/${id}/usage${ipQuery ? `?ip=${encodeURIComponent(ipQuery)}` : ''}`, [ipQuery], 3_000);
  // One pending change at a time, confirmed by a second button that takes the focus.
  const [confirm, setConfirm] = useState<'revoke' | 'expire' | 'rotate' | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => confirmRef.current?.focus(), [confirm]);
  const k = key.data;
  const act = async (what: 'revoke' | 'expire' | 'rotate') => {
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
  const CONFIRM = {
    revoke: ['Revoke this key? Its next request is refused.', 'Confirm revoke'],
    expire: ['Expire this key now? Its secrets are refused from now on.', 'Confirm expire'],
    rotate: ['Rotate this key? A new secret is shown once; the old one keeps working for a day.', 'Confirm rotate'],
  } as const;
  const u = usage.data;
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
        h(
          'section',
          { class: 'card' },
          h(Table, {
            caption: 'Key',
            head: ['Type', 'Hint', 'Workspace', 'Role', 'Scopes', 'Created', 'Expires', 'Status'],
            rows: [
              [
                k.type,
                h('code', null, k.hint),
                k.workspaceId ?? '—',
                k.role ?? '—',
                k.scopes.join(', ') || '—',
                when(k.createdAt),
                when(k.expiresAt),
                h(Status, { s: k.status }),
              ],
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
        ),
        h(
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
                `Plan ${u.plan}. The minute resets at ${new Date(u.windowReset * 1000).toLocaleTimeString()}. Monthly quota: `,
                u.monthlyQuota
                  ? `${u.monthlyQuota.used} of ${u.monthlyQuota.limit} used, renews ${new Date(u.monthlyQuota.reset * 1000).toLocaleDateString()}`
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

// ------------------------------------------------------------------ audit

function Audit() {
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

// ------------------------------------------------------------------ shell

function App() {
  const [me, setMe] = useState<Json>(null);
  const [checked, setChecked] = useState(false);
  const route = useRoute();
  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN_KEY);
    setMe(null);
  }, []);
  signOutHook = signOut;
  useEffect(() => {
    if (!sessionStorage.getItem(TOKEN_KEY)) return setChecked(true);
    api('/api/me')
      .then(setMe)
      .catch(() => {})
      .finally(() => setChecked(true));
  }, []);
  if (!checked) return null;
  if (!me) return h(SignIn, { onSignedIn: setMe });
  const link = (href: string, text: string) =>
    h('a', { href, 'aria-current': route.startsWith(href.slice(1)) ? 'page' : undefined }, text);
  // Each page's props differ; the router only hands the node to render.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let page: VNode<any>;
  let m: RegExpMatchArray | null;
  if ((m = route.match(/^\/organizations\/(\d+)$/))) page = h(Organization, { key: m[1], id: m[1], me });
  else if ((m = route.match(/^\/keys\/(\d+)$/))) page = h(Key, { key: m[1], id: m[1], me });
  else if (route === '/audit') page = h(Audit, {});
  else page = h(Organizations, {});
  return h(
    'div',
    null,
    h(
      'header',
      null,
      h('strong', null, 'keygate'),
      h('nav', { 'aria-label': 'Main' }, link('#/organizations', 'Organizations'), link('#/audit', 'Audit trail')),
      h('span', { class: 'who' }, `${me.name} (${me.role})`),
      h('button', { class: 'link', onClick: signOut }, 'Sign out'),
    ),
    page,
  );
}

render(h(App, null), document.getElementById('app')!);
