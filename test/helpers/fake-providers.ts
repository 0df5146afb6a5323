// A fake Google Admin directory and Microsoft Graph for tests, on 127.0.0.1 port 0. It speaks the API
// documented in src/backend/provider-workspaces/client.ts. Point the backend at it with
// `env: { GOOGLE_ADMIN_URL: fp.url, MICROSOFT_GRAPH_URL: fp.url }`.
//
// Tenants are programmable: a Google tenant is keyed by its admin address, a Microsoft tenant by its
// tenant id; each has a mailbox list and switches for missing delegation/consent, failing credentials
// and provider outages, changeable at any time during a test.
import http from 'node:http';
import { listenLocal } from './listen.js';

export interface FakeMailbox {
  email: string;
  displayName?: string;
  /** suspended (google) / accountEnabled false (microsoft) */
  disabled?: boolean;
}

export interface FakeTenant {
  mailboxes: FakeMailbox[];
  /** Domain-wide delegation (google) or admin consent (microsoft) granted; default true. */
  authorized?: boolean;
  /** Our service credentials are refused (401); default false. */
  credentialsFail?: boolean;
  /** Answer this status (e.g. 503) instead of a listing. */
  outage?: number;
}

export interface FakeProviders {
  url: string;
  /** Mailboxes per page (exercises paging); default 3. */
  pageSize: number;
  google: Map<string, FakeTenant>;
  microsoft: Map<string, FakeTenant>;
  /** Every request received: method, path (with query) and the delegated-user header. */
  requests: { method: string; url: string; delegatedUser?: string }[];
  close(): Promise<void>;
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function tenantFailure(res: http.ServerResponse, t: FakeTenant | undefined): boolean {
  if (!t) {
    send(res, 404, { error: { code: 404, reason: 'notFound', message: 'Resource Not Found' } });
    return true;
  }
  if (t.outage) {
    send(res, t.outage, { error: { code: t.outage, message: 'backend error' } });
    return true;
  }
  if (t.credentialsFail) {
    send(res, 401, { error: { code: 401, reason: 'invalid_client', message: 'Unauthorized client' } });
    return true;
  }
  if (t.authorized === false) {
    send(res, 403, {
      error: { code: 403, reason: 'forbidden', message: 'Not Authorized to access this resource/api' },
    });
    return true;
  }
  return false;
}

export async function startFakeProviders(): Promise<FakeProviders> {
  const fp: Omit<FakeProviders, 'url' | 'close'> = {
    pageSize: 3,
    google: new Map(),
    microsoft: new Map(),
    requests: [],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const delegated = req.headers['x-goog-delegated-user'];
    fp.requests.push({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      delegatedUser: typeof delegated === 'string' ? delegated : undefined,
    });
    if (req.method !== 'GET') return send(res, 405, { error: { message: 'method not allowed' } });

    if (url.pathname === '/admin/directory/v1/users') {
      if (url.searchParams.get('customer') !== 'my_customer')
        return send(res, 400, { error: { message: 'customer required' } });
      const t = fp.google.get(String(delegated ?? '').toLowerCase());
      if (tenantFailure(res, t)) return;
      const start = Number(url.searchParams.get('pageToken') ?? '0');
      const size = Math.min(fp.pageSize, Number(url.searchParams.get('maxResults') ?? '100'));
      const slice = t!.mailboxes.slice(start, start + size);
      const next = start + size < t!.mailboxes.length ? String(start + size) : undefined;
      return send(res, 200, {
        kind: 'admin#directory#users',
        users: slice.map((m) => ({
          primaryEmail: m.email,
          name: { fullName: m.displayName ?? '' },
          suspended: m.disabled === true,
        })),
        ...(next ? { nextPageToken: next } : {}),
      });
    }

    const ms = /^\/v1\.0\/tenants\/([^/]+)\/users$/.exec(url.pathname);
    if (ms) {
      const t = fp.microsoft.get(decodeURIComponent(ms[1]).toLowerCase());
      if (tenantFailure(res, t)) return;
      const start = Number(url.searchParams.get('$skiptoken') ?? '0');
      const size = Math.min(fp.pageSize, Number(url.searchParams.get('$top') ?? '100'));
      const slice = t!.mailboxes.slice(start, start + size);
      const next = start + size < t!.mailboxes.length ? String(start + size) : undefined;
      return send(res, 200, {
        value: slice.map((m) => ({
          mail: m.email,
          userPrincipalName: m.email,
          displayName: m.displayName ?? '',
          accountEnabled: m.disabled !== true,
        })),
        ...(next ? { skipToken: next } : {}),
      });
    }
    send(res, 404, { error: { message: 'no such route' } });
  });
  const { url } = await listenLocal(server);
  return Object.assign(fp, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
