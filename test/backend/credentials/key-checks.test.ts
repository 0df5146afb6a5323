// A credential key that does not match what sealed the stored values stops the start (issue 20,
// defect 5): the real `keygate backend` exits 2 naming CREDENTIAL_KEYS, and nothing stored is
// re-sealed or marked altered. The database records a check value per key id at the first start that
// uses it; before any is recorded, stored values under the key are the evidence.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDb } from '../../helpers/db.js';
import { freePort } from '../../helpers/redis-server.js';
import { cliArgs } from '../../helpers/cli-program.js';
import { seedWith } from '../../fixtures/seed.js';
import { applySeed, parseSeed } from '../../../src/backend/seed.js';
import { parseCredentialKeys } from '../../../src/config/credential-keys.js';
import { CredentialCipher } from '../../../src/backend/credentials/cipher.js';
import type { Db } from '../../../src/db/index.js';

const PG = process.env.DATABASE_URL;
const key = () => randomBytes(32).toString('base64');
const REAL = key();
const TYPO = key();
const FIXED = key();
const WRONG = key();

interface Outcome {
  /** Exit code, or 'serving' once the backend accepted a connection (then it was stopped). */
  code: number | 'serving';
  stderr: string;
}

// Each case starts the real program once or twice, on a machine that may be busy.
describe.runIf(Boolean(PG))('CREDENTIAL_KEYS against the stored values', { timeout: 180_000 }, () => {
  let db: Db & { drop(): Promise<void> };
  let url: string;

  /** `keygate backend` on this test's schema with the given keys, until it exits or serves. */
  async function backend(keys: string): Promise<Outcome> {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: url,
      CREDENTIAL_KEYS: keys,
      GATEWAY_SECRET: 'test-gateway-secret-0123456789',
      INTERNAL_TOKEN: 'test-internal-token-0123456789',
      HOST: '127.0.0.1',
      BACKEND_PORT: String(port),
      LOG_LEVEL: 'warn',
    };
    const argv = [...(await cliArgs()), 'backend'];
    return new Promise((resolve) => {
      let stderr = '';
      let done = false;
      const child = execFile(process.execPath, argv, { env, timeout: 90_000 }, (err) => {
        done = true;
        clearInterval(poll);
        resolve({ code: serving ? 'serving' : err ? Number((err as { code?: unknown }).code ?? 1) : 0, stderr });
      });
      child.stderr?.on('data', (c) => (stderr += c));
      let serving = false;
      const poll = setInterval(async () => {
        if (done || serving) return;
        const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          () => true,
          () => false,
        );
        if (up && !serving) {
          serving = true;
          child.kill('SIGTERM');
        }
      }, 200);
    });
  }

  const sealed = async () =>
    (
      await db.query(
        `SELECT id, status, smtp_password_sealed AS s, imap_password_sealed AS i FROM accounts WHERE id IN (5000, 5001) ORDER BY id`,
      )
    ).map((r) => ({ ...r }));
  const open = (keys: string, s: string) => new CredentialCipher(parseCredentialKeys(keys)).open('smtp_password', s);

  beforeAll(async () => {
    db = await openTestDb();
    await applySeed(db, parseSeed(seedWith()));
    // A mailbox whose password was sealed under k1 before any check value was recorded.
    const cipher = new CredentialCipher(parseCredentialKeys(`k1:${REAL}`));
    await db.query(`UPDATE accounts SET smtp_password_sealed = $1, imap_password_sealed = $2 WHERE id = 5000`, [
      cipher.seal('smtp_password', 'smtp-secret'),
      cipher.seal('imap_password', 'imap-secret'),
    ]);
    const u = new URL(PG!);
    u.searchParams.set('options', `-c search_path=${db.schema}`);
    url = u.toString();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('refuses wrong bytes under the current key id, before any check value is recorded', async () => {
    const before = await sealed();
    const r = await backend(`k1:${WRONG}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/CREDENTIAL_KEYS/);
    expect(r.stderr).toMatch(/k1/);
    expect(r.stderr).not.toContain(WRONG);
    expect(await sealed()).toEqual(before);
  });

  it('refuses a rotation whose old key is wrong: nothing is re-sealed under the new one', async () => {
    const before = await sealed();
    const r = await backend(`k2:${TYPO},k1:${WRONG}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/CREDENTIAL_KEYS/);
    expect(await sealed()).toEqual(before);
  });

  it('records the right key, then refuses other bytes under its id even with nothing sealed under it', async () => {
    expect((await backend(`k1:${REAL}`)).code).toBe('serving');
    await db.query(`UPDATE accounts SET smtp_password_sealed = NULL, imap_password_sealed = NULL WHERE id = 5000`);
    const r = await backend(`k1:${WRONG}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/setting CREDENTIAL_KEYS: key k1 does not match/);
  });

  it('after a rotation under a mistyped new key, the "fixed" key is refused and the values stay readable', async () => {
    const cipher = new CredentialCipher(parseCredentialKeys(`k1:${REAL}`));
    await db.query(`UPDATE accounts SET smtp_password_sealed = $1 WHERE id = 5000`, [
      cipher.seal('smtp_password', 'smtp-secret'),
    ]);
    // The typo is a valid key: the rotation goes through and re-seals under it.
    expect((await backend(`k2:${TYPO},k1:${REAL}`)).code).toBe('serving');
    const [rotated] = await sealed();
    expect(rotated.s).toMatch(/^kgc1\.k2\./);
    const r = await backend(`k2:${FIXED},k1:${REAL}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/setting CREDENTIAL_KEYS: key k2 does not match/);
    const [after] = await sealed();
    expect(after.status).not.toBe('error');
    expect(open(`k2:${TYPO}`, after.s)).toBe('smtp-secret');
  });
});
