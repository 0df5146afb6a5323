// Request schemas of the tags domain: strict, so an unknown field is 400 invalid_request naming it.
import { z } from 'zod';
import type { SchemaRegistry } from '../domain.js';
import { pgId } from '../../db/storable.js';

export const tagIdsSchema = z.array(pgId).max(100);

export const createSchema = z
  .object({
    name: z
      .string()
      .transform((s) => s.trim())
      .pipe(z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters')),
  })
  .strict();

export const setTagsSchema = z.object({ tagIds: tagIdsSchema }).strict();

/** The spec's Tag resource. */
export const tag = z.looseObject({ id: z.number().int(), name: z.string() });

const WS = '/v2/workspaces/{workspaceId}';

/** The routes of this domain and their schemas (read by the API description, src/openapi/). */
export const schemas: SchemaRegistry = {
  // "A tag list response is an array of tags inside Envelope A" (spec).
  [`GET ${WS}/tags`]: { response: z.array(tag), envelope: 'A' },
  [`POST ${WS}/tags`]: { body: createSchema, response: tag, status: [201] },
  [`PUT ${WS}/accounts/{accountId}/tags`]: { body: setTagsSchema },
};
