/// <reference lib="dom" />
// Sign in: an admin token, checked against /api/me and kept in this tab's sessionStorage.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import { api, TOKEN_KEY, type Json } from './api.js';
import { Err } from './ui.js';

export function SignIn({ onSignedIn, notice }: { onSignedIn: (me: Json) => void; notice?: string | null }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(notice ?? null);
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
