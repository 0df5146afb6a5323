// Partner OAuth of /v2 (spec, partner OAuth route; docs/decisions.md section 6): connect a Google or Microsoft
// mailbox with an access token the partner holds, and make consent links. The token refresh runs as a
// background job (jobs.ts); the automatic start of warming is the warmup domain's (auto_warmup).
import { ApiError } from '../../http/errors.js';
import { idParam, parse, type Router } from '../router.js';
import { assertPartnerConfigured, connectPartnerMailbox } from './connect.js';
import { acceptableRedirect, consentConfig, consentUrl } from './consent.js';
import { connectBody, consentBody } from './schemas.js';

/**
 * The service asks the partner callback for fresh access tokens, so it never holds a refresh token:
 * any field that looks like one is refused by name (spec: "sending one is rejected").
 */
function refuseRefreshTokens(body: unknown): void {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return;
  const field = Object.keys(body).find((k) => /refresh/i.test(k));
  if (field) {
    throw new ApiError(
      'invalid_request',
      `${field}: refresh tokens are not accepted; the service asks the partner callback for fresh access tokens.`,
      {
        field,
        issues: [{ field, message: 'refresh tokens are not accepted' }],
      },
    );
  }
}

export function register(router: Router): void {
  router.post('/v2/workspaces/{workspaceId}/accounts/oauth', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const orgId = ctx.identity!.organizationId;
    // Rule 1 answers every call, before the body is looked at.
    const org = await assertPartnerConfigured(ctx.svc, orgId);
    refuseRefreshTokens(ctx.body);
    const input = parse(connectBody, ctx.body ?? {});
    const connected = await connectPartnerMailbox(
      ctx.svc,
      {
        organizationId: orgId,
        workspaceId: wid,
        provider: input.provider,
        emailAddress: input.emailAddress,
        accessToken: input.accessToken,
        expiresAt: new Date(input.expiresAt),
      },
      org,
    );
    return { status: connected.created ? 201 : 200, data: connected.account };
  });

  router.post('/v2/workspaces/{workspaceId}/accounts/oauth-url', async (ctx) => {
    const wid = idParam(ctx, 'workspaceId');
    const body = parse(consentBody, ctx.body ?? {});
    const cfg = consentConfig(ctx.svc.config);
    const redirectUri = body.redirectUri ?? cfg.redirectUri;
    if (!redirectUri)
      throw new ApiError('invalid_request', 'redirectUri: required (no default redirect URI is configured).', {
        field: 'redirectUri',
      });
    if (!acceptableRedirect(redirectUri)) {
      throw new ApiError(
        'invalid_request',
        'redirectUri: must be an https URL (or http on a loopback host) without credentials or fragment.',
        { field: 'redirectUri' },
      );
    }
    const clientId = cfg.clientId[body.provider];
    if (!clientId)
      throw new ApiError(
        'service_unavailable',
        `Consent links for ${body.provider} are not configured on this server.`,
        { provider: body.provider },
      );
    const link = consentUrl(ctx.svc, {
      organizationId: ctx.identity!.organizationId,
      workspaceId: wid,
      keyId: ctx.identity!.keyId,
      provider: body.provider,
      redirectUri,
      clientId,
      loginHint: body.loginHint,
    });
    return { data: { provider: body.provider, redirectUri, ...link } };
  });
}
