/// <reference lib="dom" />
// A key's name, expiry and metadata, edited in place (PATCH /api/keys/{id}); only what changed is sent.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Json } from './api.js';
import { Err, ExpiryField, fromUtcField, Ok, toUtcField, UTC_FIELD_ERROR } from './ui.js';

/** The metadata field's text as the API's value: empty is none, else a JSON object. */
export function metadataOf(text: string): { value: Json } | { error: string } {
  if (!text.trim()) return { value: null };
  try {
    const v = JSON.parse(text);
    if (v === null || typeof v !== 'object' || Array.isArray(v))
      return { error: 'Metadata must be a JSON object, like {"plan": "pro"}, or empty for none.' };
    return { value: v };
  } catch (err) {
    return { error: `Metadata is not valid JSON: ${(err as Error).message}` };
  }
}

export const metadataText = (m: Json) => (m ? JSON.stringify(m, null, 2) : '');

export function KeyEdit({ k, onSaved }: { k: Json; onSaved: () => void }) {
  const [name, setName] = useState<string>(k.name);
  const [expires, setExpires] = useState(toUtcField(k.expiresAt));
  const [meta, setMeta] = useState(metadataText(k.metadata));
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const val = (set: (v: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(null);
    const m = metadataOf(meta);
    if ('error' in m) return setError(m.error);
    const body: Json = {};
    if (name.trim() !== k.name) body.name = name.trim();
    const at = fromUtcField(expires);
    if (at === undefined) return setError(UTC_FIELD_ERROR);
    // Compared as shown: an expiry with seconds is unchanged while its field is.
    if (expires.trim() !== toUtcField(k.expiresAt)) body.expiresAt = at;
    if (JSON.stringify(m.value) !== JSON.stringify(k.metadata ?? null)) body.metadata = m.value;
    if (!Object.keys(body).length) return setError('Nothing changed.');
    try {
      await api(`/api/keys/${k.id}`, { method: 'PATCH', body });
      setError(null);
      setSaved(`Saved ${Object.keys(body).join(', ')}.`);
      onSaved();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return h(
    'form',
    { class: 'stack', onSubmit: submit, 'aria-label': 'Edit the key' },
    h(
      'div',
      { class: 'row' },
      h(
        'label',
        null,
        'Name',
        h('input', { name: 'name', required: true, maxLength: 100, value: name, onInput: val(setName) }),
      ),
      h(ExpiryField, { value: expires, onInput: val(setExpires) }),
    ),
    h(
      'label',
      null,
      'Metadata (a JSON object, sent upstream in the signed identity; empty: none)',
      h('textarea', { name: 'metadata', rows: 4, spellcheck: false, value: meta, onInput: val(setMeta) }),
    ),
    h('p', { class: 'row' }, h('button', { type: 'submit' }, 'Save changes')),
    h(Err, { msg: error }),
    h(Ok, { msg: saved }),
  );
}
