/// <reference lib="dom" />
// The keygate console: a single page over the admin API of the same origin (src/admin-api/), signed in
// with an admin token kept in this tab's sessionStorage. Preact without JSX (h calls), bundled by
// esbuild into app.js (src/console/build.ts); no request leaves the admin listener's origin.
// The shell: sign in, the header and the hash router over the pages (one file each beside this one).
import { h, render, type VNode } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, onUnauthorized, TOKEN_KEY, useRoute, type Json } from './api.js';
import { Audit } from './audit.js';
import { Key } from './key.js';
import { Organization, Organizations } from './organizations.js';
import { SignIn } from './sign-in.js';

function App() {
  const [me, setMe] = useState<Json>(null);
  const [checked, setChecked] = useState(false);
  const route = useRoute();
  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN_KEY);
    setMe(null);
  }, []);
  onUnauthorized(signOut);
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
