// Tags of /v2 (docs/decisions.md section 6): list (Envelope A, spec: "A tag list response is an array of tags
// inside Envelope A"), create, and set an account's tags.
import { ApiError } from '../../http/errors.js';
import { idParam, parse, type Router } from '../router.js';
import { getAccount } from '../mailbox/index.js';
import { findTagByName, insertTag, listTags, replaceAccountTags } from './queries.js';
import { assertTagsExist } from './rules.js';
import { createSchema, setTagsSchema } from './schemas.js';

const WS = '/v2/workspaces/{workspaceId}';

export function register(router: Router): void {
  router.get(`${WS}/tags`, async (ctx) => ({
    envelope: 'A',
    data: await listTags(ctx.db, idParam(ctx, 'workspaceId')),
  }));

  router.post(`${WS}/tags`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const { name } = parse(createSchema, ctx.body);
    const created = await insertTag(ctx.db, ws, name);
    if (!created) {
      const existing = await findTagByName(ctx.db, ws, name);
      throw new ApiError('conflict', `A tag named "${existing?.name ?? name}" already exists in this workspace.`, {
        field: 'name',
        tagId: existing?.id ?? null,
      });
    }
    return { status: 201, data: { id: created.id, name: created.name } };
  });

  router.put(`${WS}/accounts/{accountId}/tags`, async (ctx) => {
    const ws = idParam(ctx, 'workspaceId');
    const accountId = idParam(ctx, 'accountId');
    const { tagIds } = parse(setTagsSchema, ctx.body);
    const tags = await ctx.db.tx(async (tx) => {
      await getAccount(tx, ws, accountId, true);
      const ids = await assertTagsExist(tx, ws, tagIds);
      return replaceAccountTags(tx, accountId, ids);
    });
    return { data: { accountId, tags } };
  });
}
