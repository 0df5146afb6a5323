// Request pieces every /v1 domain of mailboxes validates with: a list of account ids, an empty body,
// and the per-account "not found" item of bulk answers.
import { z } from 'zod';
import { pgId } from '../../db/storable.js';

/** 1..max distinct positive ids. */
export function idList(max: number) {
  return z
    .array(pgId)
    .min(1)
    .max(max)
    .refine((a) => new Set(a).size === a.length, 'ids must be unique');
}

export const emptyBody = z.object({}).strict();

export const notFoundItem = z.looseObject({ emailAccountId: z.number().int(), errorCode: z.literal('not_found') });
