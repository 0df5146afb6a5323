// The audit trail's retention (AUDIT_RETENTION_DAYS): rows older than the retention are purged once
// an hour, through the database's keygate_purge_audit, the only path its trigger lets delete.
import { purgeAudit } from '../../access/service/audit.js';
import type { Job } from '../domain.js';
import type { BackendServices } from '../services.js';

export function jobs(svc: BackendServices): Job[] {
  return [
    {
      name: 'audit-retention',
      intervalMs: 3_600_000,
      async run() {
        const purged = await purgeAudit({ db: svc.db }, svc.config.auditRetentionDays ?? 365);
        if (purged > 0) svc.log.info({ purged }, 'audit rows past their retention purged');
      },
    },
  ];
}
