// Consent links (POST {wid}/accounts/oauth-url): the provider's authorization URL for a mailbox owner
// to grant access, with a signed, expiring `state` that binds the grant to the workspace, provider and
// redirect URI, and a PKCE challenge whose verifier is derived from the state (no server-side storage).
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { safeEqual } from '../../http/safe-equal.js';
import type { BackendConfig, BackendServices } from '../services.js';
import type { OAuthProvider } from './profile.js';

export const STATE_TTL_MS = 10 * 60_000;

const AUTHORIZE: Record<OAuthProvider, { url: string; scope: string; extra: Record<string, string> }> = {
  google: {
    url: 'https://accounts.google.com/o/oauth2/v2/auth',
    scope: 'openid email https://mail.google.com/',
    extra: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
  },
  microsoft: {
    url: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    scope:
      'openid email offline_access User.Read https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send',
    extra: { prompt: 'select_account', response_mode: 'query' },
  },
};

/** The OAuth client ids and the default redirect URI (see consentConfig). */
export interface ConsentConfig {
  clientId: Record<OAuthProvider, string | undefined>;
  redirectUri: string | undefined;
}

/** The OAuth application's settings (GOOGLE_OAUTH_CLIENT_ID, MICROSOFT_OAUTH_CLIENT_ID, OAUTH_REDIRECT_URI). */
export function consentConfig(config: BackendConfig): ConsentConfig {
  return {
    clientId: { google: config.oauthClientIds.google, microsoft: config.oauthClientIds.microsoft },
    redirectUri: config.oauthRedirectUri,
  };
}

export interface StatePayload {
  v: 1;
  /** organization, workspace, provider, redirect URI, key that asked */
  o: number;
  w: number;
  p: OAuthProvider;
  r: string;
  k: number;
  /** expiry, unix ms */
  e: number;
  /** nonce */
  n: string;
}

function stateKey(pepper: string): Buffer {
  // A key of its own, derived from the database's pepper: a state can never be confused with a key hash.
  return createHmac('sha256', pepper).update('keygate oauth consent state v1').digest();
}

function mac(pepper: string, payload: string): string {
  return createHmac('sha256', stateKey(pepper)).update(payload).digest('base64url');
}

export function signState(pepper: string, state: StatePayload): string {
  const payload = Buffer.from(JSON.stringify(state)).toString('base64url');
  return `${payload}.${mac(pepper, payload)}`;
}

/** The payload of a state this backend signed and that has not expired; null otherwise. */
export function verifyState(pepper: string, state: string, now: number): StatePayload | null {
  const [payload, sig, extra] = state.split('.');
  if (!payload || !sig || extra !== undefined) return null;
  if (!safeEqual(mac(pepper, payload), sig)) return null;
  try {
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as StatePayload;
    return decoded.v === 1 && typeof decoded.e === 'number' && decoded.e > now ? decoded : null;
  } catch {
    return null;
  }
}

/** The PKCE verifier of a state: whoever exchanges the code recomputes it from the state alone. */
export function codeVerifierFor(pepper: string, state: string): string {
  return createHmac('sha256', stateKey(pepper)).update(`pkce:${state}`).digest('base64url');
}

export function consentUrl(
  svc: BackendServices,
  request: {
    organizationId: number;
    workspaceId: number;
    keyId: number;
    provider: OAuthProvider;
    redirectUri: string;
    clientId: string;
    loginHint?: string;
  },
) {
  const expiresAt = svc.clock.now() + STATE_TTL_MS;
  const state = signState(svc.pepper, {
    v: 1,
    o: request.organizationId,
    w: request.workspaceId,
    p: request.provider,
    r: request.redirectUri,
    k: request.keyId,
    e: expiresAt,
    n: randomBytes(12).toString('base64url'),
  });
  const challenge = createHash('sha256').update(codeVerifierFor(svc.pepper, state)).digest('base64url');
  const spec = AUTHORIZE[request.provider];
  const params = new URLSearchParams({
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    response_type: 'code',
    scope: spec.scope,
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...spec.extra,
    ...(request.loginHint ? { login_hint: request.loginHint } : {}),
  });
  return { url: `${spec.url}?${params.toString()}`, state, expiresAt: new Date(expiresAt).toISOString() };
}

/** A redirect URI must be https, or http on a loopback host (native apps and tests, RFC 8252 7.3). */
export function acceptableRedirect(uri: string): boolean {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash || url.username || url.password) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}
