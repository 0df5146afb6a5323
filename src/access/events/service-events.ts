// The events of the service layer's changes (docs/events.md), written with the change's transaction by
// the operations of src/access/service/: a key created, rotated or revoked, limits changed.
import type { Queryable } from '../../db/types.js';
import { actorColumns, nowOf, type ServiceContext } from '../service/context.js';
import { emitEvent, keyData, type KeyFields } from './outbox.js';

type Ctx = Pick<ServiceContext, 'clock' | 'actor'>;

const actorOf = (ctx: Ctx) => actorColumns(ctx.actor);

export function keyCreated(q: Queryable, ctx: Ctx, key: KeyFields): Promise<boolean> {
  return emitEvent(q, {
    type: 'key.created',
    organizationId: key.organizationId,
    at: nowOf(ctx),
    data: { key: keyData(key), actor: actorOf(ctx) },
  });
}

/**
 * A key's change as changeKey (src/access/service/keys.ts) audits it: a rotation, and a revocation
 * that revoked (revoking a revoked key changes nothing and tells nothing). Other changes tell nothing.
 */
export async function keyChanged(
  q: Queryable,
  ctx: Ctx,
  action: string,
  before: KeyFields,
  after: KeyFields,
): Promise<void> {
  const at = nowOf(ctx);
  if (action === 'key.rotate') {
    await emitEvent(q, {
      type: 'key.rotated',
      organizationId: after.organizationId,
      at,
      data: {
        key: keyData(after),
        previousHint: before.hint,
        previousSecretExpiresAt: after.previousSecret?.expiresAt ?? null,
        actor: actorOf(ctx),
      },
    });
  } else if (action === 'key.revoke' && before.revokedAt === null && after.revokedAt !== null) {
    await emitEvent(q, {
      type: 'key.revoked',
      organizationId: after.organizationId,
      at,
      data: { key: keyData(after), revokedAt: after.revokedAt, actor: actorOf(ctx) },
    });
  }
}

/** The limits fields a payload carries (a LimitsView has them all). */
export interface LimitsFields {
  organizationId: number;
  keyId?: number;
  plan: string;
  overrides: Record<string, unknown>;
  effective: Record<string, unknown>;
}

/** An organization's or a key's limits changed: told when what it sets or what applies differs. */
export async function limitsChanged(q: Queryable, ctx: Ctx, before: LimitsFields, after: LimitsFields): Promise<void> {
  const side = (l: LimitsFields) => ({ plan: l.plan, overrides: l.overrides, effective: l.effective });
  if (JSON.stringify(side(before)) === JSON.stringify(side(after))) return;
  await emitEvent(q, {
    type: 'limits.changed',
    organizationId: after.organizationId,
    at: nowOf(ctx),
    data: {
      organizationId: after.organizationId,
      keyId: after.keyId ?? null,
      before: side(before),
      after: side(after),
      actor: actorOf(ctx),
    },
  });
}
