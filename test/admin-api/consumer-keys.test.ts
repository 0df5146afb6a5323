// The admin API under a rest profile (PROFILE_FILE=test/fixtures/profiles/b-consumers.yaml): consumers
// created with their plan and overrides, keys of the profile's key types with their prefixes and scopes,
// rotated, listed by type and revoked; every refusal in the admin API's own envelope, naming what the
// profile has. test/admin-api/openapi.test.ts holds the workspace profile's answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { adminCall, adminToken } from '../helpers/admin-api.js';

describe('consumers and their keys through the admin API', () => {
  let stack: Stack;
  let token = '';
  const call = (method: string, path: string, body?: unknown) =>
    adminCall(stack.app.adminApiUrl!, method, path, { token, body });
  /** A refusal in the admin API's envelope: its status, code and message. */
  const refusal = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, path, body);
    expect(Object.keys(r.body.error).sort()).toEqual(['code', 'message', 'requestId']);
    return [r.status, r.body.error.code, r.body.error.message];
  };

  beforeAll(async () => {
    // No seed: a rest profile's deployment starts without the workspace API's demo organizations.
    stack = await startStack({
      seed: {},
      env: { ADMIN_API_PORT: '0', PROFILE_FILE: 'test/fixtures/profiles/b-consumers.yaml' },
    });
    token = (await adminToken(stack, 'write', 'consumers')).token;
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('names the profile and its key types', async () => {
    const r = await call('GET', '/api/profile');
    expect([r.status, r.body]).toEqual([
      200,
      {
        name: 'bshop',
        kind: 'rest',
        keyTypes: [
          { name: 'consumer', prefix: 'bshop_', binding: 'organization', scopes: true },
          { name: 'service', prefix: 'bsvc_', binding: 'organization', scopes: true },
        ],
      },
    ]);
    expect((await call('GET', '/api/plans')).body.items.map((p: { id: string }) => p.id)).toEqual(['free', 'pro']);
  });

  it('creates a consumer with its plan and overrides, and keys of its types', async () => {
    const made = await call('POST', '/api/organizations', {
      name: 'acme',
      plan: 'pro',
      limits: { read: 100, monthlyQuota: 5000 },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ name: 'acme', plan: 'pro', apiAccess: true, paused: false });
    const id = made.body.id;
    const limits = await call('GET', `/api/organizations/${id}/limits`);
    expect(limits.body.effective).toEqual({ read: 100, write: 200, bulk: 50, monthlyQuota: 5000 });

    const key = await call('POST', '/api/keys', {
      type: 'consumer',
      name: 'checkout',
      organizationId: id,
      scopes: ['orders:read', 'orders:write'],
    });
    expect(key.status, key.text).toBe(201);
    expect(key.body).toMatchObject({
      type: 'consumer',
      organizationId: id,
      workspaceId: null,
      userId: null,
      role: null,
      scopes: ['orders:read', 'orders:write'],
      status: 'active',
    });
    expect(key.body.secret).toMatch(/^bshop_[A-Za-z0-9]{40}$/);
    const again = await call('GET', `/api/keys/${key.body.id}`);
    expect(again.body.secret).toBeUndefined();
    expect(again.text).not.toContain(key.body.secret);

    const rotated = await call('POST', `/api/keys/${key.body.id}/rotate`, { graceSeconds: 0 });
    expect(rotated.body.secret).toMatch(/^bshop_[A-Za-z0-9]{40}$/);
    expect(rotated.body.secret).not.toBe(key.body.secret);

    const service = await call('POST', '/api/keys', { type: 'service', name: 'batch', organizationId: id });
    expect(service.body.secret).toMatch(/^bsvc_[A-Za-z0-9]{40}$/);

    const overridden = await call('PATCH', `/api/keys/${key.body.id}/limits`, { read: 7 });
    expect(overridden.body.effective).toMatchObject({ read: 7, write: 200 });

    const listed = await call('GET', `/api/keys?organization=${id}&type=service`);
    expect(listed.body.items.map((k: { name: string }) => k.name)).toEqual(['batch']);

    const revoked = await call('POST', `/api/keys/${key.body.id}/revoke`);
    expect(revoked.body.status).toBe('revoked');
  });

  it('refuses in its own envelope what the profile does not have', async () => {
    const org = (await call('POST', '/api/organizations', { name: 'refusals' })).body;
    expect(org.plan).toBeNull();
    expect(await refusal('POST', '/api/keys', { type: 'workspace', name: 'x', workspaceId: 100 })).toEqual([
      400,
      'invalid_request',
      'type: no key type "workspace" in profile bshop; its key types are consumer, service',
    ]);
    expect(
      await refusal('POST', '/api/keys', {
        type: 'consumer',
        name: 'x',
        organizationId: org.id,
        scopes: ['orders:read', 'accounts:read'],
      }),
    ).toEqual([
      400,
      'invalid_request',
      "scopes: unknown scope accounts:read; profile bshop's scopes are orders:read, orders:write, catalog:read",
    ]);
    expect(
      await refusal('POST', '/api/keys', { type: 'consumer', name: 'x', organizationId: org.id, workspaceId: 3 }),
    ).toEqual([400, 'invalid_request', 'workspaceId: a consumer key takes no workspaceId']);
    expect(
      await refusal('POST', '/api/keys', { type: 'consumer', name: 'x', organizationId: org.id, role: 'ADMIN' }),
    ).toEqual([400, 'invalid_request', 'role: a consumer key takes no role']);
    expect(await refusal('POST', '/api/keys', { type: 'consumer', name: 'x' })).toEqual([
      400,
      'invalid_request',
      'organizationId: required for a consumer key',
    ]);
    expect(await refusal('POST', '/api/keys', { type: 'consumer', name: 'x', organizationId: 999999 })).toEqual([
      404,
      'not_found',
      'no organization 999999',
    ]);
    expect(await refusal('POST', '/api/organizations', { name: 'x', plan: 'scale' })).toEqual([
      400,
      'invalid_request',
      'plan: unknown plan "scale"; the plans are free, pro',
    ]);
    expect(await refusal('POST', '/api/organizations', { name: ' ' })).toEqual([
      400,
      'invalid_request',
      expect.stringMatching(/^name: /),
    ]);
    expect(await refusal('GET', '/api/keys?type=partner')).toEqual([
      400,
      'invalid_request',
      'type must be one of consumer, service',
    ]);
  });
});
