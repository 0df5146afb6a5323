/// <reference lib="dom" />
// The keygate console: a single page over the admin API of the same origin (src/admin-api/), signed in
// with an admin token kept in this tab's sessionStorage. Preact without JSX (h calls), bundled by
// esbuild into app.js (src/console/build.ts); no request leaves the admin listener's origin.
// The shell: sign in, the header and the hash router over the pages (one file each beside this one).
import { h, render, type ComponentChildren, type VNode } from 'preact';
import { useCallback, useEffect, useErrorBoundary, useState } from 'preact/hooks';
import { api, onUnauthorized, TOKEN_KEY, useRoute, type Json } from './api.js';
import { AdminTokens } from './admin-tokens.js';
import { Audit } from './audit.js';
import { Key } from './key.js';
import { Organization, Organizations } from './organizations.js';
import { Overview } from './overview.js';
import { SignIn } from './sign-in.js';
import { Webhook, Webhooks } from './webhooks.js';

/** The page of a route (the hash without `#`); every unknown route is the overview. */
// Each page's props differ; the router only hands the node to render.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function pageOf(route: string, me: Json): VNode<any> {
  const path = route.split('?')[0];
  let m: RegExpMatchArray | null;
  if ((m = path.match(/^\/organizations\/(\d+)$/))) return h(Organization, { key: m[1], id: m[1], me });
  if ((m = path.match(/^\/keys\/(\d+)$/))) return h(Key, { key: m[1], id: m[1], me });
  if ((m = path.match(/^\/webhooks\/(\d+)$/))) return h(Webhook, { key: m[1], id: m[1], me });
  if (path === '/organizations') return h(Organizations, {});
  if (path === '/webhooks') return h(Webhooks, { me });
  if (path === '/admin-tokens') return h(AdminTokens, { me });
  if (path === '/audit') return h(Audit, {});
  return h(Overview, {});
}

/** A page that throws while rendering says so in place of going blank; the menu stays usable. */
function Boundary({ children }: { children?: ComponentChildren }) {
  const [error, reset] = useErrorBoundary();
  if (error)
    return h(
      'main',
      null,
      h('h1', null, 'This page failed'),
      h('p', { class: 'error', role: 'alert' }, String((error as Error)?.message ?? error)),
      h(
        'p',
        null,
        h('button', { class: 'secondary', onClick: reset }, 'Try again'),
        ' or ',
        h('a', { href: '#/' }, 'go to the overview'),
      ),
    );
  return h('div', null, children);
}

const NAV: [string, string][] = [
  ['#/', 'Overview'],
  ['#/organizations', 'Organizations'],
  ['#/webhooks', 'Webhooks'],
  ['#/admin-tokens', 'Admin tokens'],
  ['#/audit', 'Audit trail'],
];

function App() {
  const [me, setMe] = useState<Json>(null);
  const [checked, setChecked] = useState(false);
  const route = useRoute();
  const signOut = useCallback(() => {
    sessionStorage.removeItem(TOKEN_KEY);
    setMe(null);
  }, []);
  onUnauthorized(signOut);
  const [startError, setStartError] = useState<string | null>(null);
  useEffect(() => {
    if (!sessionStorage.getItem(TOKEN_KEY)) return setChecked(true);
    // A refused token signs out (api's 401 hook); any other failure is said on the sign-in page.
    api('/api/me')
      .then(setMe)
      .catch((err: Error) => setStartError(`The admin API did not answer as expected: ${err.message}`))
      .finally(() => setChecked(true));
  }, []);
  if (!checked) return h('main', null, h('p', { class: 'muted' }, 'Loading…'));
  if (!me) return h(SignIn, { onSignedIn: setMe, notice: startError });
  const section = route.split('?')[0].split('/')[1] ?? '';
  // Keys live under their organization in the menu.
  const current = section === 'keys' ? 'organizations' : section;
  const link = ([href, text]: [string, string]) =>
    h('a', { href, 'aria-current': href.slice(2) === current ? 'page' : undefined }, text);
  return h(
    'div',
    null,
    h(
      'header',
      null,
      h('strong', null, 'keygate'),
      h('nav', { 'aria-label': 'Main' }, NAV.map(link)),
      h('span', { class: 'who' }, `${me.name} (${me.role})`),
      h('button', { class: 'link', onClick: signOut }, 'Sign out'),
    ),
    h(Boundary, { key: route }, pageOf(route, me)),
  );
}

render(h(App, null), document.getElementById('app')!);
