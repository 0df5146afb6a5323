// export, diff and apply of the declarative state (docs/declarative-state.md). An apply is ONE
// transaction: it takes the state's advisory lock (two applies racing run one after the other), reads
// the database, plans against what it read, refuses the whole file on any mistake, and otherwise runs
// every change through the service layer with a context whose database is that transaction, so each
// change writes its audit row and events as it would alone. The access versions are bumped after the
// commit, as the service layer does; the NOTIFY triggers fire at the commit as well.
import { randomBytes } from 'node:crypto';
import type { Db, Transaction } from '../../db/types.js';
import { nowOf, type ServiceContext } from '../service/context.js';
import { documentOf, readState } from './model.js';
import { planState, type Change, type PlanOptions, type Printed } from './plan.js';
import type { StateDocument } from './schema.js';
import { lockStateApply } from './queries.js';

/**
 * The database's state as a document, and what `apply` would refuse in it: a database may hold what a
 * file may not (two live keys of one name, a scope ROUTES_FILE no longer has), and the operator should
 * hear of it when exporting rather than when applying.
 */
export async function exportState(ctx: ServiceContext): Promise<{ doc: StateDocument; mistakes: string[] }> {
  return ctx.db.tx(async (q) => {
    const held = await readState(q, nowOf(ctx));
    const doc = documentOf(held, ctx.plans());
    return { doc, mistakes: planState(ctx, held, doc, { prune: false }).mistakes };
  });
}

/** The file is refused: nothing was changed. */
export class StateMistakes extends Error {
  override name = 'StateMistakes';
  constructor(readonly mistakes: string[]) {
    super(`${mistakes.length} mistake${mistakes.length === 1 ? '' : 's'}`);
  }
}

export interface StateResult {
  changes: Change[];
  kept: string[];
}

/** `db` as the service layer sees it, all of it inside transaction `q`: a nested tx is the same one. */
function within(db: Db, q: Transaction): Db {
  return {
    kind: db.kind,
    schema: db.schema,
    query: (sql, params) => q.query(sql, params),
    tx: (fn) => fn(q),
    listen: () => Promise.reject(new Error('no LISTEN inside an apply')),
    ping: () => db.ping(),
    close: async () => {},
  };
}

async function planned(ctx: ServiceContext, q: Transaction, doc: StateDocument, o: PlanOptions) {
  const plan = planState(ctx, await readState(q, nowOf(ctx)), doc, o);
  if (plan.mistakes.length) throw new StateMistakes(plan.mistakes);
  return plan;
}

/** What applying `doc` would change; nothing is written. */
export async function diffState(ctx: ServiceContext, doc: StateDocument, o: PlanOptions): Promise<StateResult> {
  return ctx.db.tx(async (q) => {
    const { changes, kept } = await planned({ ...ctx, db: within(ctx.db, q) }, q, doc, o);
    return { changes, kept };
  });
}

/**
 * Make the database match `doc`. Throws StateMistakes (nothing changed) when the file has any; a
 * refusal of the service layer rolls the whole apply back too. The audit rows of one apply share a
 * request id (`apply-` and 16 hex digits) so the trail shows them as one.
 */
export async function applyState(
  base: ServiceContext,
  doc: StateDocument,
  o: PlanOptions,
): Promise<StateResult & { printed: Printed[]; requestId: string }> {
  const requestId = `apply-${randomBytes(8).toString('hex')}`;
  const touched = new Set<number>();
  const result = await base.db.tx(async (q) => {
    await lockStateApply(q);
    const ctx: ServiceContext = {
      ...base,
      requestId,
      db: within(base.db, q),
      // Bumped once the transaction has committed: a gateway re-reading before would see the old rows.
      accessChanged: async (orgId) => void touched.add(orgId),
    };
    const plan = await planned(ctx, q, doc, o);
    const printed: Printed[] = [];
    for (const c of plan.changes) await c.run({ ctx, q, ids: plan.ids, printed });
    return { changes: plan.changes, kept: plan.kept, printed, requestId };
  });
  for (const orgId of touched) await base.accessChanged(orgId);
  return result;
}
