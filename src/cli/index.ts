// The key-management commands of `keygate` (src/cli.ts is the entry): keys, organizations, sessions,
// over the database the programs share. Exit codes: 0 done, 1 refused (something named is not
// there), 2 bad arguments or settings.
import type { Settings } from '../config/settings.js';
import { openAdminContext } from './context.js';
import { keysCommand } from './keys.js';
import { orgsCommand } from './orgs.js';
import { limitsCommand, replayCommand } from './limits.js';
import { UsageError } from './args.js';
import { loadPlans } from '../config/plans.js';
import { dataFile } from './paths.js';
import { sessionsCommand } from './sessions.js';
import { auditCommand } from './audit.js';
import { adminTokensCommand } from './admin-tokens.js';

export { ADMIN_COMMANDS } from './commands.js';

export const USAGE = `usage: keygate <command>

programs:
  start | gateway | backend        run keygate (see README.md)
  migrate | seed                   apply the migrations / and SEED_FILE

key management (DATABASE_URL, or DATA_DIR for PGlite; REDIS_URL when the gateways use Redis):
  keys create --type workspace --workspace <id> --name <name> [--role VIEWER|EDITOR|ADMIN|OWNER]
              [--scopes a:b,c:d] [--created-by <userId>] [--expires-at <time>] [--metadata <json>]
  keys create --type personal --user <id> --name <name> [--scopes a:b,c:d] [--expires-at ...] [--metadata ...]
  keys create --type partner --org <id> --name <name> [--expires-at ...] [--metadata ...]
  keys list [--org <id>] [--workspace <id>] [--user <id>] [--type <type>] [--status active|expired|revoked] [--active]
  keys update <keyId> [--name <name>] [--expires-at <time> | --no-expiry] [--metadata <json>|null]
  keys rotate <keyId> [--grace 24h]     (0: the old secret stops at once)
  keys revoke <keyId>
  orgs pause <orgId> | orgs resume <orgId> | orgs plan <orgId> <plan|none>
  orgs limits <orgId> [--read N|plan] [--write N|plan] [--bulk N|plan] [--monthly-quota N|none|plan] [--clear]
  keys limits <keyId> [--read N|plan] [--write N|plan] [--bulk N|plan] [--clear]
  limits replay --access-log <file> --plans <plans.json> [--overrides <file>]
  sessions create --user <id> [--ttl 24h]
  audit list [filters] [--limit 100] [--before <id>]    newest first; --json: JSON lines
  audit export [filters]                               every row, oldest first, as JSON lines
  audit verify                                         check the trail's hash chain (exit 1: names the first row that does not follow)
      filters: --org <id> --actor admin-token|user|cli|internal|seed|api-key --actor-id <id>
               --action key.rotate|key. --target-type key --target <id> --since <time> --until <time>
  admin-tokens create --name <name> --role read|write | admin-tokens list [--all] | admin-tokens revoke <tokenId>

<time>: 2026-12-31T23:59:59Z (a zone is required), 2026-12-31 (UTC midnight) or +30d, +12h, +90m.
Every change is audited (the operator is the OS user). Every command takes --json (one JSON
document on stdout). A new secret or token is printed once.
Exit codes: 0 done, 1 refused (not found), 2 bad arguments or settings.
`;

export async function runAdminCommand(settings: Settings, argv: readonly string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  const open = () => openAdminContext(settings);
  if (command === 'keys' && sub === 'limits') return limitsCommand(open, 'keys', rest);
  if (command === 'keys') return keysCommand(open, sub, rest);
  if (command === 'orgs' && sub === 'limits') return limitsCommand(open, 'orgs', rest);
  if (command === 'orgs') return orgsCommand(open, sub, rest, () => loadPlans(dataFile(settings.PLANS_FILE)));
  if (command === 'limits') {
    if (sub === 'replay') return replayCommand(open, rest);
    throw new UsageError(`limits: expected replay${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
  }
  if (command === 'audit') return auditCommand(open, sub, rest);
  if (command === 'admin-tokens') return adminTokensCommand(open, sub, rest);
  return sessionsCommand(open, sub, rest);
}
