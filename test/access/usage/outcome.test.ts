// What each answered request counts as in the usage history (docs/usage.md, Storage), row by row.
import { describe, expect, it } from 'vitest';
import { gatewayRoutesOf, outcomeOf, type UsageApi, type UsageTrace } from '../../../src/access/usage/outcome.js';
import { loadRoutes } from '../../../src/config/routes.js';

const answered = gatewayRoutesOf(loadRoutes('config/routes.json'));
const keyed = { organizationId: 7, keyId: 42 };
const unkeyed = { organizationId: null, keyId: null };
const ACCOUNTS = '/v2/workspaces/{workspaceId}/accounts';

type Row = [name: string, api: UsageApi, trace: UsageTrace, status: number, outcome: string];

const rows: Row[] = [
  ['admitted, upstream 200', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 200, 'forwarded_2xx'],
  ['admitted, upstream 204', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 204, 'forwarded_2xx'],
  ['admitted, upstream 302', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 302, 'forwarded_3xx'],
  ['admitted, upstream 404', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 404, 'forwarded_4xx'],
  ['admitted, upstream 503', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 503, 'forwarded_5xx'],
  ['admitted, upstream odd 600', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 600, 'forwarded_5xx'],
  ['admitted, a WebSocket tunnel opened (101)', 'v2', { route: ACCOUNTS, code: null, ...keyed }, 101, 'forwarded_2xx'],
  ['admitted, gateway 502', 'v2', { route: ACCOUNTS, code: 'bad_gateway', ...keyed }, 502, 'forwarded_5xx'],
  ['admitted, gateway 504', 'v2', { route: ACCOUNTS, code: 'gateway_timeout', ...keyed }, 504, 'forwarded_5xx'],
  ['admitted on /v1, gateway 502', 'v1', { route: '/v1/leads', code: 'bad_gateway', ...keyed }, 502, 'forwarded_5xx'],
  // A rest profile writes its own codes (docs/profiles.md): the gateway's 502 and 504 are known by status.
  [
    'a rest profile, gateway 502',
    'shop',
    { route: '/api/orders', code: 'upstream-down', ...keyed },
    502,
    'forwarded_5xx',
  ],
  [
    'a rest profile, gateway 504',
    'shop',
    { route: '/api/orders', code: 'gateway-timeout', ...keyed },
    504,
    'forwarded_5xx',
  ],
  ['/v1 admitted, 201', 'v1', { route: '/v1/leads', code: null, ...keyed }, 201, 'forwarded_2xx'],
  [
    '/v2 status route',
    'v2',
    { route: '/v2/workspaces/{workspaceId}/rate-limit', code: null, ...keyed },
    200,
    'answered',
  ],
  ['/v1 status route', 'v1', { route: '/v1/rate-limit', code: null, ...keyed }, 200, 'answered'],
  ['CORS preflight', 'v2', { route: 'preflight', code: null, ...unkeyed }, 204, 'answered'],
  ['API description', 'v2', { route: '/v2/openapi.json', code: null, ...unkeyed }, 200, 'answered'],
  ['key layer', 'v2', { route: ACCOUNTS, code: '150005', limit: 'key', ...keyed }, 429, 'limited_key'],
  ['address layer', 'v2', { route: ACCOUNTS, code: '150005', limit: 'address', ...keyed }, 429, 'limited_address'],
  ['monthly quota', 'v2', { route: ACCOUNTS, code: '150005', limit: 'month', ...keyed }, 429, 'limited_month'],
  [
    '/v1 key layer',
    'v1',
    { route: '/v1/leads', code: 'rate_limit_exceeded', limit: 'key', ...keyed },
    429,
    'limited_key',
  ],
  [
    '/v1 monthly quota',
    'v1',
    { route: '/v1/leads', code: 'rate_limit_exceeded', limit: 'month', ...keyed },
    429,
    'limited_month',
  ],
  ['no bearer key', 'v2', { route: 'unmatched', code: '150001', ...unkeyed }, 401, 'refused_150001'],
  ['invalid key', 'v2', { route: 'unmatched', code: '150002', ...unkeyed }, 401, 'refused_150002'],
  ['scope', 'v2', { route: ACCOUNTS, code: '150003', ...keyed }, 403, 'refused_150003'],
  ['another workspace', 'v2', { route: ACCOUNTS, code: '150004', ...keyed }, 403, 'refused_150004'],
  ['cooldown', 'v2', { route: 'unmatched', code: '150006', ...unkeyed }, 429, 'refused_150006'],
  ['paused organization', 'v2', { route: ACCOUNTS, code: '040006', ...keyed }, 403, 'refused_040006'],
  ['no route', 'v2', { route: 'unmatched', code: 'not_found', ...keyed }, 404, 'refused_not_found'],
  ['body too large', 'v2', { route: ACCOUNTS, code: 'payload_too_large', ...keyed }, 413, 'refused_payload_too_large'],
  [
    'limiter down',
    'v2',
    { route: ACCOUNTS, code: 'rate_limiter_unavailable', ...keyed },
    503,
    'refused_rate_limiter_unavailable',
  ],
  ['/v1 missing key', 'v1', { route: 'unmatched', code: 'unauthorized', ...unkeyed }, 401, 'refused_unauthorized'],
  [
    '/v1 no API access',
    'v1',
    { route: '/v1/leads', code: 'api_access_disabled', ...keyed },
    403,
    'refused_api_access_disabled',
  ],
  ['502 before a key', 'v2', { route: 'unmatched', code: 'bad_gateway', ...unkeyed }, 502, 'refused_bad_gateway'],
];

describe('outcomeOf', () => {
  it.each(rows)('%s', (_name, api, trace, status, outcome) => {
    expect(outcomeOf(api, trace, status, answered)).toBe(outcome);
  });

  it('builds no string per refusal: the same code gives the same string object', () => {
    const t = { route: 'unmatched', code: '150002', ...unkeyed };
    expect(Object.is(outcomeOf('v2', t, 401), outcomeOf('v2', { ...t }, 401))).toBe(true);
  });

  it('finds the status routes in the route table', () => {
    expect([...answered].sort()).toEqual(['/v1/rate-limit', '/v2/workspaces/{workspaceId}/rate-limit']);
  });
});
