// The rule other routes share about tags: an account's tags must be tags of its workspace.
import { ApiError } from '../../http/errors.js';
import type { Queryable } from '../../db/index.js';
import { knownTagIds } from './queries.js';

/** Every id must be a tag of the workspace; otherwise 400 naming the unknown ids. Returns the distinct ids. */
export async function assertTagsExist(db: Queryable, workspaceId: number, tagIds: number[]): Promise<number[]> {
  const ids = [...new Set(tagIds)];
  if (!ids.length) return ids;
  const known = await knownTagIds(db, workspaceId, ids);
  const unknown = ids.filter((id) => !known.has(id));
  if (unknown.length) {
    throw new ApiError('invalid_request', `tagIds: unknown tag ids in this workspace: ${unknown.join(', ')}`, {
      field: 'tagIds',
      unknownTagIds: unknown,
      issues: [{ field: 'tagIds', message: `unknown tag ids: ${unknown.join(', ')}` }],
    });
  }
  return ids;
}
