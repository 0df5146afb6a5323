#!/usr/bin/env node
// The program's entry, compiled to dist/cli.js (what the image, deploy/ and `npm run gateway` run; the npm
// bin src/cli/launch.mjs runs it too): the programs start (all-in-one) | gateway | backend | migrate |
// seed (docs/decisions.md sections 1 and 8), started here; the key-management commands (keys, orgs,
// sessions, audit, admin-tokens, limits) handed to src/cli/program.ts; --help and --version answered by
// src/cli/help.ts. Each is loaded only when asked for. Exit code 2: a bad setting or argument.
// First: V8 settings that must hold before any other module's code runs (./ops/v8-flags.ts says which and why).
import './ops/v8-flags.js';
import { ConfigError } from './config/errors.js';
import { loadSettings, withGeneratedSecrets, type Mode, type Settings } from './config/settings.js';
import { readJson } from './config/plans.js';
import { createLogger } from './ops/logger.js';
import { startApp, type App } from './app.js';
import { startSeedFile } from './app/seed.js';
import { loadProfile } from './config/profile/load.js';
import type { Profile } from './config/profile/types.js';
import { migrate, ownsSchema, recordOwnerSettings } from './db/index.js';
import type { Seed } from './access/seed.js';
import { ADMIN_COMMANDS, asksForHelp, PROGRAMS } from './cli/commands.js';
import { noArguments } from './cli/args.js';
import { openDatabase } from './cli/context.js';
import { getPepper } from './access/pepper.js';
import { dataFile } from './cli/paths.js';
import cluster from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { announceWorkerReady, runPrimary, servePrimaryHandoffs, workerCount, workerId } from './ops/cluster.js';

const DEMO_SEED = dataFile('config/demo-seed.json');

/** A seed file, parsed. It has the backend domains' sections too: their modules are loaded to read one. */
async function readSeed(file: string, profile: Profile): Promise<Seed> {
  const { parseSeed } = await import('./backend/seed.js');
  return parseSeed(readJson(file, 'SEED_FILE'), file, profile);
}

/** Relative data-file paths are found from any working directory (src/cli/paths.ts). */
function withDataFiles(s: Settings): Settings {
  return {
    ...s,
    PROFILE_FILE: dataFile(s.PROFILE_FILE),
    PLANS_FILE: dataFile(s.PLANS_FILE),
    ROUTES_FILE: dataFile(s.ROUTES_FILE),
    WARMUP_BANDS_FILE: dataFile(s.WARMUP_BANDS_FILE),
    OPENAPI_DIR: dataFile(s.OPENAPI_DIR),
  };
}

async function main() {
  const args = process.argv.slice(2);
  if (asksForHelp(args)) {
    process.stdout.write((await import('./cli/help.js')).helpOrVersion(args));
    return;
  }
  if ((ADMIN_COMMANDS as readonly string[]).includes(args[0])) {
    // The commands need no program's secrets: validated as for `migrate`.
    const { runAdminCommand } = await import('./cli/program.js');
    return runAdminCommand(withDataFiles(loadSettings(process.env, 'migrate')), args);
  }
  const mode = (args[0] ?? 'start') as Mode;
  if (!(PROGRAMS as readonly string[]).includes(mode)) {
    const all = [...PROGRAMS, ...ADMIN_COMMANDS];
    throw new ConfigError(
      `unknown command ${JSON.stringify(mode)}; expected ${all.slice(0, -1).join(', ')} or ${all.at(-1)} (keygate --help)`,
    );
  }
  noArguments(mode, args.slice(1));
  const settings = withDataFiles(loadSettings(process.env, mode));
  // WORKERS > 1 makes the gateway a cluster (below), whose primary and workers write to one stdout.
  const clustered = mode !== 'backend' && mode !== 'migrate' && mode !== 'seed' && workerCount(settings.WORKERS) > 1;
  const log = createLogger(settings.LOG_LEVEL, undefined, { shared: clustered });

  if (mode === 'migrate' || mode === 'seed') {
    const db = await openDatabase(settings);
    const applied = await migrate(db);
    log.info({ applied }, 'migrations applied');
    // The owner's records (src/db/index.ts): the audit retention, and the programs' role's grants.
    if (await ownsSchema(db))
      await recordOwnerSettings(db, {
        auditRetentionDays: settings.AUDIT_RETENTION_DAYS,
        appRole: settings.DATABASE_APP_ROLE,
      });
    else if (settings.DATABASE_APP_ROLE)
      throw new ConfigError('setting DATABASE_APP_ROLE: `keygate migrate` must run as the role that owns the schema');
    if (mode === 'seed') {
      const file = settings.SEED_FILE ?? DEMO_SEED;
      const { applySeed } = await import('./backend/seed.js');
      // Its keys are of the profile's key types (a rest profile's consumers: examples/shop/seed.json).
      const profile = loadProfile(settings);
      await applySeed(db, await readSeed(file, profile), file, profile);
      log.info({ file }, 'seed applied');
    }
    await db.close();
    return;
  }

  // WORKERS > 1: this process becomes the primary of src/ops/cluster.ts; its workers run the gateway below.
  if (clustered) {
    if (cluster.isPrimary) return runGatewayCluster(mode, settings, log);
    // All-in-one's backend stays in the primary, which applied the seed and passed its URL and secrets.
    const app = await startApp({
      mode: 'gateway',
      settings: withGeneratedSecrets(settings),
      log: log.child({ worker: workerId(), pid: process.pid }),
      handedConnections: true,
    });
    const stop = installShutdown(app, log, settings.DRAIN_TIMEOUT_MS);
    servePrimaryHandoffs(
      (socket) => app.acceptConnection(socket),
      () => stop('SIGTERM'),
    );
    log.info({ worker: workerId(), pid: process.pid, gateway: app.gatewayUrl }, 'keygate gateway worker listening');
    return announceWorkerReady(app.gatewayUrl, app.adminUrl);
  }

  const full = withGeneratedSecrets(settings);
  // The demo seed is loaded only all-in-one; the split programs load SEED_FILE when it is given.
  const profile = loadProfile(settings);
  const seedFile = startSeedFile(settings, mode, profile, DEMO_SEED);
  const seed = seedFile ? await readSeed(seedFile, profile) : undefined;
  // All-in-one forwards to its own backend, unless UPSTREAM_URL names another upstream explicitly.
  const upstreamOverride = mode === 'start' && process.env.UPSTREAM_URL ? settings.UPSTREAM_URL : undefined;
  const app = await startApp({ mode, settings: full, log, seed, upstreamOverride });
  installShutdown(app, log, settings.DRAIN_TIMEOUT_MS);

  if (mode === 'start') {
    const adminToken = app.adminApiUrl
      ? await (await import('./admin-api/index.js')).demoAdminToken(app.db, await getPepper(app.db))
      : null;
    printBanner(app, profile, full.INTERNAL_TOKEN, seed, seedFile, adminToken);
  } else
    log.info({ gateway: app.gatewayUrl, backend: app.backendUrl, admin: app.adminUrl }, `keygate ${mode} listening`);
}

/**
 * The primary of WORKERS > 1 (src/ops/cluster.ts): no gateway listener of its own. All-in-one keeps
 * its backend here (on 127.0.0.1, as in one process) and hands the workers its URL and the secrets it
 * generated, so every worker signs what this backend verifies.
 */
async function runGatewayCluster(mode: Mode, settings: Settings, log: ReturnType<typeof createLogger>) {
  const full = withGeneratedSecrets(settings);
  let backend: App | null = null;
  let workerEnv: Record<string, string> = {};
  const profile = loadProfile(settings);
  const seedFile = mode === 'start' ? startSeedFile(settings, mode, profile, DEMO_SEED) : undefined;
  const seed = seedFile ? await readSeed(seedFile, profile) : undefined;
  // Under another profile there is no backend: the workers forward to the profile's services.
  if (mode === 'start' && profile.kind === 'workspace') {
    backend = await startApp({ mode: 'backend', settings: { ...full, HOST: '127.0.0.1' }, log, seed });
    const upstream = process.env.UPSTREAM_URL ? settings.UPSTREAM_URL : backend.backendUrl!;
    workerEnv = {
      GATEWAY_SECRET: full.GATEWAY_SECRET,
      INTERNAL_TOKEN: full.INTERNAL_TOKEN,
      UPSTREAM_URL: upstream,
      SEED_FILE: '',
    };
  } else if (mode === 'start') workerEnv = { GATEWAY_SECRET: full.GATEWAY_SECRET, INTERNAL_TOKEN: full.INTERNAL_TOKEN };
  const group = await runPrimary({
    count: workerCount(settings.WORKERS),
    entry: fileURLToPath(import.meta.url),
    host: settings.ADMIN_HOST,
    gatewayHost: settings.HOST,
    port: settings.PORT,
    adminPort: settings.ADMIN_PORT,
    adminMaxConnections: settings.ADMIN_MAX_CONNECTIONS,
    drainMs: settings.DRAIN_TIMEOUT_MS,
    log,
    workerEnv,
    onStopped: async () => backend?.close(settings.DRAIN_TIMEOUT_MS),
    onReload: () => backend?.reload(),
  }).catch(async (err) => {
    await backend?.close(0).catch(() => {});
    throw err;
  });
  if (backend)
    printBanner(
      { ...backend, gatewayUrl: group.gatewayUrl, adminUrl: group.adminUrl },
      profile,
      full.INTERNAL_TOKEN,
      seed,
      seedFile,
    );
}

function printBanner(
  app: App,
  profile: Profile,
  internalToken: string,
  seed: Seed | undefined,
  seedFile: string | undefined,
  adminToken: string | null = null,
) {
  const prefixes = profile.interfaces.map((i) => i.prefix).join(', ');
  const lines = [
    '',
    `keygate is running (all-in-one)`,
    `  gateway   ${app.gatewayUrl}    (${prefixes})`,
    ...(app.backendUrl ? [`  backend   ${app.backendUrl}    (private: /api-keys, /internal)`] : []),
    `  admin     ${app.adminUrl}    (/healthz, /readyz, /metrics)`,
    `  internal token (this start only): ${internalToken}`,
    ...(app.adminApiUrl && adminToken
      ? [
          `  admin API and console ${app.adminApiUrl}/    (sign in with the admin token below)`,
          `  admin token (write, this start only): ${adminToken}`,
        ]
      : []),
  ];
  // A rest profile's consumers and keys are the operator's to make (docs/profiles.md): no demo seed.
  if (seedFile) lines.push('', `API keys from ${seedFile}:`);
  else if (profile.kind === 'rest')
    lines.push(
      '',
      `Profile ${profile.name} (${profile.file}): make a consumer and its key with the admin API, or with`,
      `  keygate orgs create --name <name> --plan <plan>; keygate keys create --type ${profile.interfaces[0].keyTypes[0].name} --org <id> --name <name> --scopes <scopes>`,
    );
  for (const k of seed?.apiKeys ?? []) lines.push(`  ${k.secret}  ${k.name}`);
  const ws = seed?.apiKeys.find((k) => k.secret.startsWith('svc_ws_'));
  if (ws?.workspaceId) {
    lines.push(
      '',
      'Try:',
      `  curl -i -H "Authorization: Bearer ${ws.secret}" ${app.gatewayUrl}/v2/workspaces/${ws.workspaceId}/accounts`,
      '',
    );
  }
  process.stdout.write(lines.join('\n') + '\n');
}

/** SIGTERM/SIGINT: readiness 503 at once, stop accepting, drain in-flight requests, exit 0. */
function installShutdown(app: App, log: ReturnType<typeof createLogger>, drainMs: number): (signal: string) => void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.setReady(false);
    log.info({ signal, drainMs }, 'shutting down: draining');
    app
      .close(drainMs)
      .then(() => {
        log.info('stopped');
        process.exit(0);
      })
      .catch((err) => {
        log.error({ err: (err as Error).message }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGHUP', () => app.reload());
  process.on('SIGINT', () => stop('SIGINT'));
  return stop;
}

main().catch((err) => {
  // A worker that could not start has printed its own line; the primary only passes its code on.
  const workerExit = (err as { exitCode?: number }).exitCode;
  if (workerExit !== undefined) process.exit(workerExit);
  process.stderr.write(`keygate: ${(err as Error).message}\n`);
  // A bad setting or argument is 2 (the README's promise); a refused command or a failure 1.
  process.exit(err instanceof ConfigError ? 2 : 1);
});
