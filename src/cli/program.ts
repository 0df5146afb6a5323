// The key-management commands of `keygate` (src/cli.ts is the entry, src/cli/help.ts their --help):
// keys, organizations, sessions, the audit trail, admin tokens and limits, over the database the programs
// share, each dispatched here to its module. Exit codes: 0 done, 1 refused (something named is not
// there), 2 bad arguments or settings.
import type { Settings } from '../config/settings.js';
import type { Profile } from '../config/profile/types.js';
import { loadCliProfile, openAdminContext } from './context.js';
import { keysCommand } from './keys.js';
import { orgsCommand } from './orgs.js';
import { limitsCommand, replayCommand } from './limits.js';
import { UsageError } from './args.js';
import { sessionsCommand } from './sessions.js';
import { auditCommand } from './audit.js';
import { adminTokensCommand } from './admin-tokens.js';
import { usageCommand } from './usage.js';
import { stateCommand } from './state.js';

export async function runAdminCommand(settings: Settings, argv: readonly string[]): Promise<void> {
  const [command, sub, ...rest] = argv;
  // PROFILE_FILE, read once when a command first needs it (its key types, scopes and plans).
  let profile: Profile | undefined;
  const profileOf = () => (profile ??= loadCliProfile(settings));
  const open = () => openAdminContext(settings, profileOf());
  if (command === 'keys' && sub === 'limits') return limitsCommand(open, 'keys', rest);
  if (command === 'keys') return keysCommand(open, sub, rest, profileOf);
  if (command === 'orgs' && sub === 'limits') return limitsCommand(open, 'orgs', rest);
  if (command === 'orgs') return orgsCommand(open, sub, rest, profileOf);
  if (command === 'limits') {
    if (sub === 'replay') return replayCommand(open, rest);
    throw new UsageError(`limits: expected replay${sub ? ` (got ${JSON.stringify(sub)})` : ''}`);
  }
  if (command === 'audit') return auditCommand(open, sub, rest);
  if (command === 'admin-tokens') return adminTokensCommand(open, sub, rest);
  if (command === 'usage') return usageCommand(open, sub, rest);
  if (command === 'export' || command === 'diff' || command === 'apply')
    return stateCommand(open, command, argv.slice(1), profileOf);
  return sessionsCommand(open, sub, rest);
}
