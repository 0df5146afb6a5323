// Every access change leaves its audit row, whatever route makes it (docs/service-layer.md, The audit
// trail). The changes are found in the code, not in a list kept by hand: every call that bumps an
// organization's access version (`accessChanged(...)`, or the seed's own bump) is located, and named by
// the route registration (`router.post('/v2/...')`) or the service operation that holds it. The walk
// below must hold a step for each of them (a new bump without one fails here), and each step drives
// the real all-in-one program or the real CLI (child processes, on PostgreSQL) through that change and
// finds its row in audit_events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTestDb } from '../helpers/db.js';
import { startProgram, type Program } from '../helpers/program.js';
import { freePort } from '../helpers/redis-server.js';
import { runCli } from '../helpers/cli-program.js';
import { seedWith, K } from '../fixtures/seed.js';

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/**
 * The places that bump an access version, each named by what holds it: `METHOD /path` for a backend
 * route's handler, `service <operation>` for an exported operation of src/access/service/ (a private
 * helper is named by the exported operations that call it), `seed` for the seed loader.
 */
export function accessBumps(root = 'src'): string[] {
  const units = new Set<string>();
  for (const file of sources(root)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\b(?:ctx\.svc|ctx|stores)\.(?:accessChanged|versions\.bump)\(/g)) {
      const head = text.slice(0, m.index);
      if (file.includes('/access/service/')) {
        const fn = [...head.matchAll(/^(export )?async function (\w+)/gm)].at(-1)!;
        if (fn[1]) units.add(`service ${fn[2]}`);
        else
          for (const caller of text.matchAll(/^export async function (\w+)[\s\S]*?^}/gm))
            if (caller[0].includes(`${fn[2]}(`)) units.add(`service ${caller[1]}`);
      } else if (file.includes('/backend/')) {
        const route = [...head.matchAll(/router\.(get|post|patch|put|delete)\(\s*'([^']+)'/g)].at(-1);
        if (!route) throw new Error(`${file}: a bump outside a route handler`);
        units.add(`${route[1].toUpperCase()} ${route[2]}`);
      } else if (file.endsWith('/app/seed.ts')) units.add('seed');
      // `keygate apply` (src/access/state/): its changes the service layer does not make are bumped there.
      else if (file.includes('/access/state/')) units.add('apply');
      else throw new Error(`${file}: a bump this walk does not know how to name`);
    }
  }
  return [...units].sort();
}

describe('accessBumps', () => {
  it('finds the bumps of the backend routes and of the service layer', () => {
    const units = accessBumps();
    expect(units).toContain('service createKey');
    expect(units).toContain('service revokeKey');
    expect(units).toContain('POST /v2/workspaces/{workspaceId}/members');
  });
});

// A real PostgreSQL: the program and the CLI are other processes reading the test's schema.
describe.skipIf(!process.env.DATABASE_URL)('every access change leaves its audit row', () => {
  let db: Awaited<ReturnType<typeof openTestDb>>;
  let program: Program;
  let dir: string;
  let gateway: string;
  let backend: string;
  let cliEnv: NodeJS.ProcessEnv;
  const INTERNAL = 'walk-internal-token-0123456789';

  beforeAll(async () => {
    db = await openTestDb();
    dir = mkdtempSync(join(tmpdir(), 'kg-audit-walk-'));
    writeFileSync(join(dir, 'seed.json'), JSON.stringify(seedWith()));
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('options', `-c search_path=${db.schema}`);
    const [port, backendPort, admin] = [await freePort(), await freePort(), await freePort()];
    program = await startProgram({
      DATABASE_URL: url.toString(),
      SEED_FILE: join(dir, 'seed.json'),
      PORT: String(port),
      BACKEND_PORT: String(backendPort),
      ADMIN_PORT: String(admin),
      HOST: '127.0.0.1',
      INTERNAL_TOKEN: INTERNAL,
      ACCESS_LOG: 'off',
      LOG_LEVEL: 'warn',
    });
    gateway = `http://127.0.0.1:${port}`;
    backend = `http://127.0.0.1:${backendPort}`;
    const base = { ...process.env };
    delete base.REDIS_URL;
    cliEnv = { ...base, DATABASE_URL: url.toString() };
  }, 180_000);
  afterAll(async () => {
    if (program && program.child.exitCode === null) {
      const exited = new Promise((r) => program.child.once('exit', r));
      program.child.kill('SIGKILL');
      await exited;
    }
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function call(base: string, method: string, path: string, bearer: string, body?: unknown) {
    const r = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    expect(r.status, `${method} ${path}: ${text}`).toBeLessThan(300);
    return JSON.parse(text).data;
  }
  async function cli(...args: string[]) {
    const r = await runCli([...args, '--json'], cliEnv);
    expect(r.code, `keygate ${args.join(' ')}: ${r.stderr}`).toBe(0);
    return JSON.parse(r.stdout);
  }

  let invited = 0;
  let keyId = 0;
  /** One step per bump: makes the change, and names the audit action it must leave. */
  const WALK: Record<string, () => Promise<string>> = {
    seed: async () => 'seed.apply', // applied by the program at its start, before the walk
    'POST /v2/workspaces': async () => {
      await call(gateway, 'POST', '/v2/workspaces', K.ownerPk, { name: 'Walked' });
      return 'workspace.create';
    },
    'POST /v2/workspaces/{workspaceId}/members': async () => {
      const m = await call(gateway, 'POST', '/v2/workspaces/100/members', K.wsAdmin, {
        email: 'walker@acme.test',
        role: 'VIEWER',
      });
      invited = m.userId;
      return 'member.invite';
    },
    'PATCH /v2/workspaces/{workspaceId}/members/{userId}': async () => {
      await call(gateway, 'PATCH', `/v2/workspaces/100/members/${invited}`, K.wsAdmin, { role: 'EDITOR' });
      return 'member.update';
    },
    'DELETE /v2/workspaces/{workspaceId}/members/{userId}': async () => {
      await call(gateway, 'DELETE', `/v2/workspaces/100/members/${invited}`, K.wsAdmin);
      return 'member.remove';
    },
    'service createKey': async () => {
      keyId = (await cli('keys', 'create', '--type', 'partner', '--org', '1', '--name', 'walked')).id;
      return 'key.create';
    },
    'service updateKey': async () => {
      await cli('keys', 'update', String(keyId), '--name', 'walked again');
      return 'key.update';
    },
    'service rotateKey': async () => {
      await cli('keys', 'rotate', String(keyId), '--grace', '0');
      return 'key.rotate';
    },
    'service setKeyLimits': async () => {
      await cli('keys', 'limits', String(keyId), '--read', '5');
      return 'key.limits';
    },
    'service revokeKey': async () => {
      await cli('keys', 'revoke', String(keyId));
      return 'key.revoke';
    },
    'service updateOrganization': async () => {
      await cli('orgs', 'pause', '2');
      return 'organization.pause';
    },
    'service setOrganizationLimits': async () => {
      await cli('orgs', 'limits', '2', '--read', '50');
      return 'organization.limits';
    },
    apply: async () => {
      const file = join(dir, 'state.json');
      const exported = await runCli(['export', '--format', 'json', '--out', file], cliEnv);
      expect(exported.code, exported.stderr).toBe(0);
      const doc = JSON.parse(readFileSync(file, 'utf8'));
      doc.organizations.push({ name: 'Walked by apply' });
      writeFileSync(file, JSON.stringify(doc));
      await cli('apply', file);
      return 'organization.create';
    },
    'service deleteWorkspace': async () => {
      await call(backend, 'DELETE', '/internal/workspaces/101', INTERNAL);
      return 'workspace.delete';
    },
  };

  it('holds a step for every place that bumps an access version', () => {
    expect(Object.keys(WALK).sort()).toEqual(accessBumps());
  });

  it('each change writes its row', async () => {
    const missing: string[] = [];
    for (const [unit, step] of Object.entries(WALK)) {
      const [{ last }] = await db.query(`SELECT coalesce(max(id), 0)::bigint AS last FROM audit_events`);
      const action = await step();
      const since = unit === 'seed' ? 0 : last;
      const rows = await db.query(`SELECT id FROM audit_events WHERE action = $1 AND id > $2`, [action, since]);
      if (rows.length !== 1) missing.push(`${unit}: ${rows.length} rows of ${action}`);
    }
    expect(missing).toEqual([]);
  }, 180_000);
});
