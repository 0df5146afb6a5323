// The provider HTTP client: lists the mailboxes of a registered tenant, which is also how a
// registration proves that domain-wide delegation (Google-family) or admin consent
// (Microsoft-family) is in place (v1 spec rule 2: registration runs no consent flow).
//
// Base URLs come from settings (GOOGLE_ADMIN_URL, MICROSOFT_GRAPH_URL), so tests point them at a
// local fake (test/helpers/fake-providers.ts). The API the client speaks:
//
// Google-family (modelled on the Admin SDK Directory API, acting as the admin by delegation):
//   GET {GOOGLE_ADMIN_URL}/admin/directory/v1/users?customer=my_customer&maxResults=500[&pageToken=T]
//   header X-Goog-Delegated-User: <adminEmail>
//   200 {"users":[{"primaryEmail","name":{"fullName"},"suspended"?}], "nextPageToken"?}
//   401 the service credentials are rejected
//   403 domain-wide delegation is not granted for the admin
//   404 no such admin (unknown address, or not an administrator)
//
// Microsoft-family (modelled on Microsoft Graph, app-only with the tenant's admin consent):
//   GET {MICROSOFT_GRAPH_URL}/v1.0/tenants/{tenantId}/users?$top=500[&$skiptoken=T]
//   200 {"value":[{"mail"?,"userPrincipalName","displayName","accountEnabled"?}], "skipToken"?}
//   401 the app credentials are rejected
//   403 admin consent is not granted in the tenant
//   404 no such tenant
//
// Anything else (5xx, a timeout, a body of the wrong shape) is "unavailable". Suspended or disabled
// users and entries without a valid address are not mailboxes to import.
import { z } from 'zod';

export type Provider = 'google' | 'microsoft';

export interface Mailbox {
  email: string;
  displayName: string;
  domain: string;
}

export type ProviderFailure =
  /** delegation (google) or admin consent (microsoft) is missing */
  | 'not_authorized'
  /** the admin address or the tenant id is unknown to the provider */
  | 'unknown_tenant'
  /** our credentials are refused */
  | 'credentials_failed'
  /** the provider could not be reached or answered nonsense */
  | 'unavailable';

export class ProviderError extends Error {
  constructor(
    readonly failure: ProviderFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface ProviderClientConfig {
  googleAdminUrl: string;
  microsoftGraphUrl: string;
  timeoutMs?: number;
}

export interface TenantRef {
  provider: Provider;
  adminEmail: string | null;
  tenantId: string | null;
}

const PAGE_SIZE = 500;
/** A tenant larger than this is refused rather than half-imported. */
export const MAX_MAILBOXES = 10_000;

const EMAIL = z.string().email().max(254);

const googlePage = z.object({
  users: z
    .array(
      z.object({
        primaryEmail: z.string(),
        name: z.object({ fullName: z.string().optional() }).optional(),
        suspended: z.boolean().optional(),
      }),
    )
    .optional()
    .default([]),
  nextPageToken: z.string().min(1).optional(),
});

const microsoftPage = z.object({
  value: z.array(
    z.object({
      mail: z.string().nullable().optional(),
      userPrincipalName: z.string().optional(),
      displayName: z.string().nullable().optional(),
      accountEnabled: z.boolean().optional(),
    }),
  ),
  skipToken: z.string().min(1).optional(),
});

function trimBase(url: string) {
  return url.replace(/\/+$/, '');
}

export class ProviderClient {
  constructor(private cfg: ProviderClientConfig) {}

  /** Every mailbox of the tenant (deduplicated by address, in the provider's order). */
  async listMailboxes(tenantRef: TenantRef): Promise<Mailbox[]> {
    const out = new Map<string, Mailbox>();
    const add = (email: string, name: string | null | undefined) => {
      const normalized = email.trim().toLowerCase();
      if (!EMAIL.safeParse(normalized).success || out.has(normalized)) return;
      out.set(normalized, {
        email: normalized,
        displayName: (name ?? '').trim(),
        domain: normalized.slice(normalized.lastIndexOf('@') + 1),
      });
    };
    let token: string | undefined;
    for (let pages = 0; ; pages++) {
      if (out.size > MAX_MAILBOXES || pages > MAX_MAILBOXES / 10)
        throw new ProviderError('unavailable', 'the tenant has too many mailboxes to import at once');
      if (tenantRef.provider === 'google') {
        const url = new URL(`${trimBase(this.cfg.googleAdminUrl)}/admin/directory/v1/users`);
        url.searchParams.set('customer', 'my_customer');
        url.searchParams.set('maxResults', String(PAGE_SIZE));
        if (token) url.searchParams.set('pageToken', token);
        const page = googlePage.safeParse(await this.get(url, { 'x-goog-delegated-user': tenantRef.adminEmail ?? '' }));
        if (!page.success) throw new ProviderError('unavailable', 'the provider answered an unexpected body');
        for (const directoryUser of page.data.users)
          if (!directoryUser.suspended) add(directoryUser.primaryEmail, directoryUser.name?.fullName);
        token = page.data.nextPageToken;
      } else {
        const url = new URL(
          `${trimBase(this.cfg.microsoftGraphUrl)}/v1.0/tenants/${encodeURIComponent(tenantRef.tenantId ?? '')}/users`,
        );
        url.searchParams.set('$top', String(PAGE_SIZE));
        if (token) url.searchParams.set('$skiptoken', token);
        const page = microsoftPage.safeParse(await this.get(url, {}));
        if (!page.success) throw new ProviderError('unavailable', 'the provider answered an unexpected body');
        for (const directoryUser of page.data.value)
          if (directoryUser.accountEnabled !== false)
            add(directoryUser.mail || directoryUser.userPrincipalName || '', directoryUser.displayName);
        token = page.data.skipToken;
      }
      if (!token) return [...out.values()];
    }
  }

  private async get(url: URL, headers: Record<string, string>): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: { accept: 'application/json', ...headers },
        signal: AbortSignal.timeout(this.cfg.timeoutMs ?? 10_000),
        redirect: 'error',
      });
    } catch (err) {
      throw new ProviderError('unavailable', `the provider could not be reached (${(err as Error).name})`);
    }
    const text = await res.text().catch(() => '');
    if (res.status === 401) throw new ProviderError('credentials_failed', 'the provider refused our credentials');
    if (res.status === 403)
      throw new ProviderError('not_authorized', 'domain-wide delegation or admin consent is not in place');
    if (res.status === 404)
      throw new ProviderError('unknown_tenant', 'the provider does not know this admin address or tenant');
    if (res.status !== 200) throw new ProviderError('unavailable', `the provider answered HTTP ${res.status}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new ProviderError('unavailable', 'the provider answered a body that is not JSON');
    }
  }
}
