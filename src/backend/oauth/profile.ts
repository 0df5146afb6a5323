// The provider profile lookup that identifies the mailbox behind an access token (spec, partner OAuth
// rule 2): Gmail answers `{emailAddress}`, Microsoft Graph `/me` answers `{mail, userPrincipalName}`.
import { ApiError } from '../../http/errors.js';
import type { BackendConfig } from '../services.js';

export type OAuthProvider = 'google' | 'microsoft';

export const PROFILE_TIMEOUT_MS = 10_000;

/** The addresses the token's mailbox answers to, lower-cased (Microsoft may give two). */
export async function profileAddresses(
  config: BackendConfig,
  provider: OAuthProvider,
  accessToken: string,
): Promise<string[]> {
  const url = provider === 'google' ? config.googleProfileUrl : config.microsoftProfileUrl;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      signal: AbortSignal.timeout(PROFILE_TIMEOUT_MS),
    });
  } catch {
    throw new ApiError('bad_gateway', `The ${provider} profile lookup could not be reached.`, { provider });
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    throw new ApiError('unprocessable_entity', `The ${provider} profile lookup refused the access token.`, {
      field: 'accessToken',
      provider,
      providerStatus: res.status,
    });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new ApiError('bad_gateway', `The ${provider} profile lookup failed (HTTP ${res.status}).`, {
      provider,
      providerStatus: res.status,
    });
  }
  let body: Record<string, unknown>;
  try {
    body = (await res.json()) as Record<string, unknown>;
  } catch {
    throw new ApiError('bad_gateway', `The ${provider} profile lookup answered something other than JSON.`, {
      provider,
    });
  }
  const fields = provider === 'google' ? [body?.emailAddress] : [body?.mail, body?.userPrincipalName];
  const out = fields
    .filter((x): x is string => typeof x === 'string' && x.includes('@'))
    .map((x) => x.trim().toLowerCase());
  if (!out.length) throw new ApiError('bad_gateway', `The ${provider} profile lookup named no mailbox.`, { provider });
  return out;
}
