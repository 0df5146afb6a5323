// @keygate/verifier as a service gets it: `npm pack` builds the tarball, a scratch project holds it as
// `npm install` would (unpacked in node_modules, its one dependency beside it), plain Node imports it
// and every case of test/vectors/ reaches its expected verdict, and TypeScript finds its declarations.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = resolve('.');
const PACKAGE = join(ROOT, 'packages/verifier');
const VECTORS = join(ROOT, 'test/vectors');

let tmp: string;
let tarball: string;
let project: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'kg-verifier-'));
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', tmp], {
    cwd: PACKAGE,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
  tarball = join(tmp, packed.stdout.trim().split('\n').at(-1)!);
  project = join(tmp, 'service');
  const modules = join(project, 'node_modules');
  mkdirSync(join(modules, '@keygate'), { recursive: true });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'service', private: true, type: 'module' }));
  await run('tar', ['-xzf', tarball, '-C', join(modules, '@keygate')]);
  renameSync(join(modules, '@keygate/package'), join(modules, '@keygate/verifier'));
  for (const dep of ['jose', '@types/node']) {
    mkdirSync(join(modules, dep, '..'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep), 'dir');
  }
  cpSync(join(PACKAGE, 'test/check-vectors.mjs'), join(project, 'check-vectors.mjs'));
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the packed @keygate/verifier', () => {
  it('holds the built JavaScript, its declarations, the README and the manifest, and no source', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    expect(stdout.trim().split('\n').sort()).toEqual([
      'package/README.md',
      'package/dist/digest.d.ts',
      'package/dist/digest.js',
      'package/dist/index.d.ts',
      'package/dist/index.js',
      'package/package.json',
    ]);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/@keygate/verifier/package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies)).toEqual(['jose']);
    expect(manifest.private).toBeUndefined();
  });

  it('imported from plain Node, reaches every expected verdict of the test vectors', async () => {
    const { stdout } = await run(process.execPath, ['check-vectors.mjs', VECTORS], { cwd: project });
    const got = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { file: string; name: string; firstValid: boolean | null; outcome: unknown });
    for (const file of ['identity-hmac.json', 'identity-jwt.json']) {
      const cases = (
        JSON.parse(readFileSync(join(VECTORS, file), 'utf8')) as {
          cases: {
            name: string;
            seenBefore?: boolean;
            expected: { valid: boolean; identity?: unknown; reason?: string };
          }[];
        }
      ).cases;
      expect(cases.length).toBeGreaterThan(0);
      expect(got.filter((g) => g.file === file)).toEqual(
        cases.map((c) => ({
          file,
          name: c.name,
          firstValid: c.seenBefore ? true : null,
          // A valid JWT case also lists the token's claims, which the verifier does not return.
          outcome: c.expected.valid ? { valid: true, identity: c.expected.identity } : c.expected,
        })),
      );
    }
  });

  it('gives a TypeScript service its declarations', async () => {
    writeFileSync(
      join(project, 'service.ts'),
      [
        "import { createJwtVerifier, createMemoryReplayCache, IdentityVerificationError, verifyHmacIdentity } from '@keygate/verifier';",
        "import type { Identity, ReplayCache, VerificationFailure } from '@keygate/verifier';",
        'const replay: ReplayCache = createMemoryReplayCache();',
        "const verify = createJwtVerifier({ jwks: { keys: [] }, audience: 'orders', replay });",
        'export async function who(headers: Record<string, string>, body?: Buffer): Promise<Identity | VerificationFailure> {',
        '  try {',
        "    const a = await verify(headers, { method: 'GET', target: '/v2/x', body });",
        "    const b = await verifyHmacIdentity('s', { method: 'GET', target: '/v2/x', headers, body }, { replay });",
        "    return a.keyId === b.keyId ? a : 'bad_signature';",
        '  } catch (err) {',
        '    if (err instanceof IdentityVerificationError) return err.reason;',
        '    throw err;',
        '  }',
        '}',
        '// @ts-expect-error: the package has no such export',
        "export { signIdentity } from '@keygate/verifier';",
      ].join('\n'),
    );
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
      'service.ts',
    ];
    await expect(run(process.execPath, [tsc, ...args], { cwd: project })).resolves.toBeDefined();
  }, 120_000);
});
