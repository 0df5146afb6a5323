// The warmup domain's jobs: pending lowered limits taking effect, remembered starts, and the planned
// warmup sends of warming mailboxes (kept filled for today and tomorrow).
import type { Job } from '../domain.js';
import type { BackendServices } from '../services.js';
import { autoStartDue } from './lifecycle.js';
import { applyDueLimits } from './limits.js';
import { planAhead, windowsOf } from './schedule.js';
import { cancelSendsOfStoppedAccounts, warmingAccounts } from './queries.js';

export function jobs(svc: BackendServices): Job[] {
  return [
    {
      // A lowered max takes effect at the mailbox's next local midnight.
      name: 'warmup.apply-pending-limits',
      intervalMs: 60_000,
      async run() {
        const ids = await applyDueLimits(svc.db, new Date(svc.clock.now()));
        if (ids.length) svc.log.info({ accounts: ids.length }, 'pending warmup limits applied');
      },
    },
    {
      // Starts remembered once the warming cap has room again; partner-OAuth mailboxes once DNS passes.
      name: 'warmup.auto-start',
      intervalMs: 5 * 60_000,
      async run() {
        const results = Object.values(await autoStartDue(svc));
        const started = results.filter((r) => r === 'started').length;
        if (started) svc.log.info({ started }, 'warmup started automatically');
      },
    },
    {
      name: 'v1.plan-warmup-sends',
      intervalMs: 15 * 60_000,
      async run() {
        const now = svc.clock.now();
        // Mailboxes that stopped warming (whichever interface stopped them) lose their pending sends.
        await cancelSendsOfStoppedAccounts(svc.db);
        const warming = await warmingAccounts(svc.db);
        const windows = await windowsOf(
          svc.db,
          warming.map((a) => a.id),
        );
        for (const account of warming) {
          try {
            await svc.db.tx((q) => planAhead(q, account, now, windows.get(account.id)));
          } catch (err) {
            // One mailbox's failure does not stop the others' plans.
            svc.log.error({ err: (err as Error).message, emailAccountId: account.id }, 'planning warmup sends failed');
          }
        }
      },
    },
  ];
}
