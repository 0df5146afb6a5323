// The service layer's refusals as the CLI reports them: bad input is a usage error (exit code 2),
// anything else (not there, not allowed, conflicting) a refusal (exit code 1), on one line that
// names the command and, where the service names one, the option at fault.
import { ServiceError } from '../access/service/context.js';
import { UsageError } from './args.js';
import { CommandError } from './output.js';

/** The CLI option of each input field the service may name at the start of its message. */
const OPTION: Record<string, string> = {
  role: '--role',
  scopes: '--scopes',
  metadata: '--metadata',
  grace: '--grace',
  name: '--name',
  expiresAt: '--expires-at',
  ttl: '--ttl',
  type: '--type',
  plan: '--plan',
};

export async function viaService<T>(command: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    let msg = err.message;
    // A rest profile's refusal names its scopes already; the workspace API's are ROUTES_FILE's.
    if (err.reason === 'unknown_scope') msg = `--${msg}${/ profile /.test(msg) ? '' : ' (not in ROUTES_FILE)'}`;
    else {
      const m = /^([a-zA-Z]+)\b/.exec(msg);
      if (m && OPTION[m[1]] && err.field === m[1]) msg = OPTION[m[1]] + msg.slice(m[1].length);
    }
    if (err.kind === 'invalid' && err.reason !== 'revoked') throw new UsageError(`${command}: ${msg}`);
    throw new CommandError(`${command}: ${msg}`);
  }
}
