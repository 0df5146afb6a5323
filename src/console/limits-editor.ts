/// <reference lib="dom" />
// The per-minute budgets (and an organization's monthly quota) of an organization or a key: what it sets,
// what applies, and the form that changes them.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, useApi, type Json } from './api.js';
import { Err, Table } from './ui.js';

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
export function LimitsEditor({
  path,
  quota,
  write,
  label,
}: {
  path: string;
  quota: boolean;
  write: boolean;
  label: string;
}) {
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
