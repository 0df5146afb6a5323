// Tampers with the audit trail as a role that can: the role owning audit_events (it may disable the
// table's triggers) or a superuser (it may also switch every trigger off for its session). Each case is
// one edit of the trail that `keygate audit verify` must catch; the script prints, as one JSON line,
// the id of the row verification must name (the first row that no longer follows its predecessor).
//
//   DATABASE_URL=postgres://owner@host/db?options=-c%20search_path%3Dkeygate \
//     npx tsx scripts/audit-tamper.ts <case> [--superuser]
//
// cases:
//   edit               change the actor of the second row
//   delete             delete the second row (the third no longer follows)
//   delete-oldest      delete the oldest row (the next no longer follows the purge checkpoint)
//   delete-newest      delete the newest row (the trail's head names a row that is gone)
//   insert             add a row dated 400 days back with a forged actor, triggers off
//   insert-triggered   the same with the triggers on: the database stamps its own time and role,
//                      and chains it (verification passes; the row shows who really wrote it)
import pg from 'pg';

const CASES = ['edit', 'delete', 'delete-oldest', 'delete-newest', 'insert', 'insert-triggered'] as const;
type Case = (typeof CASES)[number];

async function tamper(client: pg.Client, which: Case, superuser: boolean): Promise<Record<string, unknown>> {
  const ids = (await client.query(`SELECT id FROM audit_events ORDER BY id`)).rows.map((r) => Number(r.id));
  if (ids.length < 3) throw new Error('the trail needs at least 3 rows to tamper with');
  await client.query('BEGIN');
  if (which !== 'insert-triggered') {
    if (superuser) await client.query(`SET LOCAL session_replication_role = replica`);
    else await client.query(`ALTER TABLE audit_events DISABLE TRIGGER USER`);
  }
  let row: number;
  switch (which) {
    case 'edit':
      await client.query(`UPDATE audit_events SET actor_id = 'someone-else' WHERE id = $1`, [ids[1]]);
      row = ids[1];
      break;
    case 'delete':
      await client.query(`DELETE FROM audit_events WHERE id = $1`, [ids[1]]);
      row = ids[2];
      break;
    case 'delete-oldest':
      await client.query(`DELETE FROM audit_events WHERE id = $1`, [ids[0]]);
      row = ids[1];
      break;
    case 'delete-newest':
      await client.query(`DELETE FROM audit_events WHERE id = $1`, [ids.at(-1)]);
      row = ids.at(-1)!;
      break;
    case 'insert':
    case 'insert-triggered': {
      const r = await client.query(
        `INSERT INTO audit_events (at, actor_kind, actor_id, action, target_type, target_ids, organization_id)
         VALUES (now() - interval '400 days', 'admin-token', 'forged', 'key.revoke', 'key', '{1}', 1)
         RETURNING id, at`,
      );
      row = Number(r.rows[0].id);
      break;
    }
  }
  if (which !== 'insert-triggered' && !superuser) await client.query(`ALTER TABLE audit_events ENABLE TRIGGER USER`);
  await client.query('COMMIT');
  const at = (await client.query(`SELECT at FROM audit_events WHERE id = $1`, [row])).rows[0]?.at;
  return { case: which, row, ...(at ? { at: new Date(at).toISOString() } : {}) };
}

async function main() {
  const [which, ...flags] = process.argv.slice(2);
  if (!(CASES as readonly string[]).includes(which) || flags.some((f) => f !== '--superuser')) {
    process.stderr.write(`usage: audit-tamper.ts <${CASES.join('|')}> [--superuser]\n`);
    process.exit(2);
  }
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is required');
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const out = await tamper(client, which as Case, flags.includes('--superuser'));
    process.stdout.write(JSON.stringify(out) + '\n');
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  process.stderr.write(`audit-tamper: ${(err as Error).message}\n`);
  process.exit(1);
});
