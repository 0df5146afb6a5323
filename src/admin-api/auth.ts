// Who calls the admin API: a bearer admin token, checked only while the caller's address has guesses
// left. Failed token attempts are counted per client address in the shared limiter (Redis when
// configured, so the whole fleet counts one address's guesses together) and refused for the rest of
// the minute past ADMIN_AUTH_FAILURES. Not the stores' FailureCooldown: that is the gateway's rule (five
// failures in 15 minutes, then 15 minutes refused, counted after a failure, one count per address for
// every key), while an admin guess is counted before it is checked, against a limit and window of its
// own, and does not lock the address out of the gateway.
import type http from 'node:http';
import { windowStart } from '../limits/types.js';
import { addressKey } from '../http/address.js';
import { authenticateAdminToken, type AuthenticatedToken } from '../access/service/admin-tokens.js';
import { AdminApiError } from './errors.js';
import type { AdminApiDeps } from './deps.js';

/** Failed token attempts one client address may make per minute before it is refused (429). */
export const ADMIN_AUTH_FAILURES = 10;

type Guess = { refusedFor: number } | { takeBack(): Promise<unknown> };

/**
 * A guess is counted before its token is looked up, so that guesses arriving together cannot all be
 * checked against a count none of them has added to yet. Per address and minute, `adm:` counts every
 * bearer token presented and `adm-ok:` the ones taken back: a valid token once checked, and a guess
 * refused unchecked. Their difference is the failures plus the checks in flight; a guess is checked
 * only while it is at most ADMIN_AUTH_FAILURES. The taken-back count is read before the guess is
 * counted, so a take-back can never be set against a guess it did not follow. Without a token
 * (`guessing` false) nothing is counted: the count is only read, to tell such a client it is refused.
 */
async function countGuess({ stores, clock }: AdminApiDeps, ip: string, guessing: boolean): Promise<Guess> {
  const address = addressKey(ip);
  const tried = { id: `adm:${address}`, limit: ADMIN_AUTH_FAILURES };
  const takenBack = { id: `adm-ok:${address}`, limit: ADMIN_AUTH_FAILURES };
  const at = clock.now();
  const [back] = await stores.limiter.spend([takenBack], 0, at);
  const [seen] = await stores.limiter.spend([tried], guessing ? 1 : 0, at);
  const pending = seen.used - back.used;
  const takeBack = async () => {
    // A window that ended meanwhile took its count with it: nothing to take back from the next one.
    if (windowStart(clock.now()) === windowStart(at)) return stores.limiter.spend([takenBack], 1);
  };
  if (pending > ADMIN_AUTH_FAILURES || (!guessing && pending >= ADMIN_AUTH_FAILURES)) {
    if (guessing) await takeBack();
    return { refusedFor: Math.max(1, Math.ceil(seen.reset - clock.now() / 1000)) };
  }
  return { takeBack };
}

/** The request's admin token, or the refusal: 429 past the failures, else 401 without a valid token. */
export async function authenticate(
  deps: AdminApiDeps,
  req: http.IncomingMessage,
  ip: string,
): Promise<AuthenticatedToken> {
  const auth = req.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer +(\S+) *$/i.exec(auth) : null;
  const guess = await countGuess(deps, ip, m !== null);
  if ('refusedFor' in guess)
    throw new AdminApiError(
      'too_many_attempts',
      'too many failed token attempts from this address; try again later',
      guess.refusedFor,
    );
  if (!m) throw new AdminApiError('unauthorized', 'an admin token is required: Authorization: Bearer <token>');
  const token = await authenticateAdminToken(deps.db, deps.pepper, m[1], deps.clock.now()).catch(async (err) => {
    await guess.takeBack(); // not a failed guess: the database did not answer
    throw err;
  });
  if (!token) throw new AdminApiError('unauthorized', 'the admin token is not valid (unknown or revoked)');
  await guess.takeBack();
  return token;
}
