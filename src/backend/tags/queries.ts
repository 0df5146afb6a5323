// The SQL of tags: the tags of a workspace and the tags of an account, and the seed file's tags and
// tag assignments.
import type { Queryable } from '../../db/index.js';

export interface Tag {
  id: number;
  name: string;
}

/** A new tag, or null when the workspace has one of that name: names are unique per workspace regardless of case (index tags_name_key on lower(name)). */
export async function insertTag(db: Queryable, workspaceId: number, name: string): Promise<Tag | null> {
  const rows = await db.query<Tag & Record<string, unknown>>(
    `INSERT INTO tags (workspace_id, name) VALUES ($1, $2) ON CONFLICT (workspace_id, lower(name)) DO NOTHING RETURNING id, name`,
    [workspaceId, name],
  );
  return rows[0] ?? null;
}

export async function findTagByName(db: Queryable, workspaceId: number, name: string): Promise<Tag | null> {
  const rows = await db.query<Tag & Record<string, unknown>>(
    `SELECT id, name FROM tags WHERE workspace_id = $1 AND lower(name) = lower($2)`,
    [workspaceId, name],
  );
  return rows[0] ?? null;
}

export async function listTags(db: Queryable, workspaceId: number): Promise<Tag[]> {
  return db.query<Tag & Record<string, unknown>>(`SELECT id, name FROM tags WHERE workspace_id = $1 ORDER BY id`, [
    workspaceId,
  ]);
}

/** Which of `ids` are tags of the workspace. */
export async function knownTagIds(db: Queryable, workspaceId: number, ids: number[]): Promise<Set<number>> {
  const rows = await db.query(`SELECT id FROM tags WHERE workspace_id = $1 AND id = ANY($2::int[])`, [
    workspaceId,
    ids,
  ]);
  return new Set(rows.map((r) => r.id as number));
}

/** Replace the account's tags with `tagIds` (already checked to belong to the account's workspace). */
export async function replaceAccountTags(db: Queryable, accountId: number, tagIds: number[]): Promise<Tag[]> {
  await db.query(`DELETE FROM account_tags WHERE account_id = $1 AND NOT (tag_id = ANY($2::int[]))`, [
    accountId,
    tagIds,
  ]);
  if (tagIds.length) {
    await db.query(
      `INSERT INTO account_tags (account_id, tag_id) SELECT $1, unnest($2::int[]) ON CONFLICT DO NOTHING`,
      [accountId, tagIds],
    );
  }
  return db.query<Tag & Record<string, unknown>>(
    `SELECT t.id, t.name FROM account_tags x JOIN tags t ON t.id = x.tag_id WHERE x.account_id = $1 ORDER BY t.id`,
    [accountId],
  );
}

/** Writes the seed's tag under its id, over any row of that id. */
export async function upsertSeedTag(db: Queryable, tag: Tag & { workspaceId: number }): Promise<void> {
  await db.query(
    `INSERT INTO tags (id, workspace_id, name) VALUES ($1,$2,$3) ON CONFLICT (id) DO UPDATE SET workspace_id=$2, name=$3`,
    [tag.id, tag.workspaceId, tag.name],
  );
}

export async function deleteAccountTags(db: Queryable, accountId: number): Promise<void> {
  await db.query(`DELETE FROM account_tags WHERE account_id=$1`, [accountId]);
}

/** Tags the account with the tag when the tag is of `workspaceId` (the account's workspace); otherwise nothing. */
export async function insertSeedAccountTag(
  db: Queryable,
  accountId: number,
  tagId: number,
  workspaceId: number,
): Promise<void> {
  await db.query(
    `INSERT INTO account_tags (account_id, tag_id) SELECT $1, t.id FROM tags t WHERE t.id=$2 AND t.workspace_id=$3`,
    [accountId, tagId, workspaceId],
  );
}
