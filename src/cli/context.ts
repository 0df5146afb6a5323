// What the key-management commands work with, built once per command and handed down: the same
// database the programs use, its pepper, the data files, and the access-version bump the backend's
// routes make after every access change (src/access/versions.ts accessChangedVia).
import { userInfo } from 'node:os';
import { Writable } from 'node:stream';
import type { Settings } from '../config/settings.js';
import { ConfigError, settingError, targetOf } from '../config/errors.js';
import type { Plans } from '../config/plans.js';
import type { MinRole, Routes } from '../config/routes.js';
import { openDb, type Db } from '../db/index.js';
import { getPepper } from '../access/pepper.js';
import { accessChangedVia } from '../access/versions.js';
import { createRedisClient, createRedisStores, redisClientSettings } from '../limits/redis/index.js';
import { createLogger } from '../ops/logger.js';
import { systemClock } from '../ops/clock.js';
import type { ServiceContext } from '../access/service/context.js';
import type { Profile } from '../config/profile/types.js';
import { loadProfile } from '../config/profile/load.js';
import { dataFile } from './paths.js';

export interface AdminContext {
  db: Db;
  /** The profile in force (PROFILE_FILE): its key types, scopes and plans are what the commands accept. */
  profile: Profile;
  /** The pepper of the keyed hash of secrets and session tokens (docs/decisions.md section 2). */
  pepper: string;
  plans(): Plans;
  /** Every scope a key may hold (the profile's) and its minimum role where the profile has roles. */
  scopes(): Record<string, MinRole | null>;
  /** ROUTES_FILE's tables (`limits replay` finds each logged route's bucket there). */
  routes(): Routes;
  /** After committing an access change: running gateways drop the organization's cached principals. */
  accessChanged(orgId: number): Promise<void>;
  /** The service layer's context: every change is made through src/access/service/ as the CLI operator. */
  service: ServiceContext;
  close(): Promise<void>;
}

/** The operating-system user running the command, as the audit trail names a CLI operator. */
export function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    // A container user without a passwd entry: its uid is still who it is.
    return process.env.USER || `uid:${process.getuid?.() ?? 'unknown'}`;
  }
}

/** The database of DATABASE_URL (or PGlite in DATA_DIR), answering; a failure names the setting. */
export async function openDatabase(s: Settings): Promise<Db> {
  const setting = s.DATABASE_URL ? 'DATABASE_URL' : 'DATA_DIR';
  const where = s.DATABASE_URL ? { url: s.DATABASE_URL } : { path: s.DATA_DIR };
  let db: Db | undefined;
  try {
    db = await openDb({ databaseUrl: s.DATABASE_URL, dataDir: s.DATA_DIR, queryTimeoutMs: s.DB_QUERY_TIMEOUT_MS });
    await db.query('SELECT 1');
    return db;
  } catch (err) {
    await db?.close().catch(() => {});
    throw settingError(setting, err, where);
  }
}

/** A pino destination that turns the rare log line of a command into one readable stderr line. */
function stderrLines(): Writable {
  return new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const { msg, err } = JSON.parse(line) as { msg?: string; err?: string };
        process.stderr.write(`keygate: warning: ${msg}${err ? ` (${err})` : ''}\n`);
      }
      done();
    },
  });
}

/**
 * The profile the settings name, read once per command: a key the CLI makes has its key types' prefixes
 * and its scopes (docs/profiles.md). A mistake in it stops the command as it stops a start (exit code 2).
 */
export function loadCliProfile(s: Settings): Profile {
  return loadProfile({
    PROFILE_FILE: dataFile(s.PROFILE_FILE),
    ROUTES_FILE: dataFile(s.ROUTES_FILE),
    PLANS_FILE: dataFile(s.PLANS_FILE),
  });
}

export async function openAdminContext(s: Settings, profile: Profile = loadCliProfile(s)): Promise<AdminContext> {
  const db = await openDatabase(s);
  let pepper: string;
  try {
    pepper = await getPepper(db);
  } catch {
    await db.close();
    const where = s.DATABASE_URL ? `DATABASE_URL: ${targetOf(s.DATABASE_URL)}` : `DATA_DIR: ${s.DATA_DIR}`;
    throw new ConfigError(`setting ${where} holds no keygate schema yet; run \`keygate migrate\` first`);
  }
  const log = createLogger('warn', stderrLines());
  // Without Redis every gateway keeps its versions in memory: the database's NOTIFY (the triggers of
  // migration 001) is then what reaches them, as it is for the backend in another process.
  const redis = redisClientSettings(s)
    ? // A command waits for the connection once; the gateway's 50 ms budget is for requests.
      createRedisClient({ ...redisClientSettings(s), commandTimeoutMs: Math.max(s.REDIS_COMMAND_TIMEOUT_MS, 3_000) })
    : null;
  redis?.on('error', () => {}); // a failed bump is reported by accessChangedVia, once
  const versions = redis ? createRedisStores({ redis, prefix: s.REDIS_KEY_PREFIX }).versions : null;
  const bump = versions ? accessChangedVia(versions, log) : async () => {};
  // A workspace profile's routes and plans are ROUTES_FILE's and PLANS_FILE's, read with it.
  const plans = () => profile.plans;
  const scopes = () => profile.routes.scopes;
  return {
    db,
    profile,
    pepper,
    plans,
    scopes,
    routes: () => profile.routes,
    accessChanged: bump,
    service: {
      db,
      actor: { kind: 'cli', osUser: osUser() },
      clock: systemClock,
      pepper,
      plans,
      scopes,
      profile: () => profile,
      accessChanged: bump,
    },
    async close() {
      redis?.disconnect();
      await db.close();
    },
  };
}

/** Open the context, run `fn`, close the context whatever happens. */
export async function withContext<T>(
  open: () => Promise<AdminContext>,
  fn: (ctx: AdminContext) => Promise<T>,
): Promise<T> {
  const ctx = await open();
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}
