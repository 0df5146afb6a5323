// Plans are data (PLANS_FILE): a plan the file adds is one the admin API accepts, shows and reports,
// and the gateway's next request of the organization carries its budget; a name the file lacks is
// refused in the admin API's envelope, naming the field, and nothing changes.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack, type Res } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';
import { K } from '../fixtures/seed.js';

const ENTERPRISE_READ = 4321;
let stack: Stack;
let token = '';

const call = (method: string, path: string, body?: unknown): Promise<Res> =>
  adminCall(stack.app.adminApiUrl!, method, path, { token, body, ip: '198.51.100.4' });

beforeAll(async () => {
  const plans = JSON.parse(readFileSync('config/plans.json', 'utf8')) as Record<string, Record<string, unknown>>;
  plans.enterprise = { ...plans.growth, label: 'Enterprise', read: ENTERPRISE_READ };
  const file = join(mkdtempSync(join(tmpdir(), 'kg-plans-')), 'plans.json');
  writeFileSync(file, JSON.stringify(plans));
  stack = await startStack({ env: { ADMIN_API_PORT: '0', PLANS_FILE: file } });
  token = (await adminToken(stack, 'write', 'plans-write')).token;
});
afterAll(() => stack?.close());

describe('a plan of PLANS_FILE that is not built in', () => {
  it('is set through the admin API, shown, and its budget rules the next request', async () => {
    const changed = await call('PATCH', '/api/organizations/1', { plan: 'enterprise' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ id: 1, plan: 'enterprise' });

    const shown = await call('GET', '/api/organizations/1');
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body).toMatchObject({ plan: 'enterprise' });

    const usage = await call('GET', '/api/keys/1000/usage');
    expect(usage.status, usage.text).toBe(200);
    expect(usage.body).toMatchObject({ plan: 'enterprise' });

    const r = await stack.request('GET', '/v2/workspaces/100/accounts', { key: K.wsAdmin, ip: '203.0.113.71' });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-ratelimit-limit')).toBe(String(ENTERPRISE_READ));
  });

  it('a name the file lacks is refused (400, naming plan) and nothing changes', async () => {
    const before = await call('GET', '/api/organizations/1');
    const refused = await call('PATCH', '/api/organizations/1', { plan: 'platinum' });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.text).toContain('plan');
    const after = await call('GET', '/api/organizations/1');
    expect(after.body).toEqual(before.body);
  });
});
