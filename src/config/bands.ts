// config/warmup-bands.json: the automatic reply-rate and thread-tendency bands by current daily limit
// (spec, Warmup settings rule 1). Validated strictly once per file, failing fast with the field's name.
import { z } from 'zod';
import { ConfigError, formatZodIssue } from './errors.js';
import { readJson } from './plans.js';

const percent = z.number().min(0).max(100);
const range = z
  .object({ min: percent, max: percent })
  .strict()
  .refine((r) => r.min <= r.max, { message: 'min must not exceed max' });

const bandSchema = z
  .object({
    fromLimit: z.number().int().min(5),
    toLimit: z.number().int().min(5).nullable(),
    replyRate: range,
    threadTendency: range,
  })
  .strict()
  .refine((b) => b.toLimit === null || b.toLimit >= b.fromLimit, {
    message: 'toLimit must not be below fromLimit',
    path: ['toLimit'],
  });

export const bandsFileSchema = z
  .object({
    description: z.string().optional(),
    bands: z.array(bandSchema).min(1),
  })
  .strict()
  .superRefine((file, ctx) => {
    // Every limit from 5 (warmupMinLimit) upward falls in exactly one band.
    if (file.bands[0].fromLimit !== 5)
      ctx.addIssue({ code: 'custom', path: ['bands', 0, 'fromLimit'], message: 'the first band must start at 5' });
    file.bands.forEach((band, index) => {
      const last = index === file.bands.length - 1;
      if (last && band.toLimit !== null)
        ctx.addIssue({
          code: 'custom',
          path: ['bands', index, 'toLimit'],
          message: 'the last band must be open (null)',
        });
      if (!last && band.toLimit === null)
        ctx.addIssue({ code: 'custom', path: ['bands', index, 'toLimit'], message: 'only the last band may be open' });
      if (!last && band.toLimit !== null && file.bands[index + 1].fromLimit !== band.toLimit + 1) {
        ctx.addIssue({
          code: 'custom',
          path: ['bands', index + 1, 'fromLimit'],
          message: `must be ${band.toLimit + 1}, right after the previous band`,
        });
      }
    });
  });

export type Band = z.infer<typeof bandSchema>;

export class Bands {
  constructor(readonly list: Band[]) {}

  /** The band in force for a current daily limit (limits below 5 fall in the first band). */
  forLimit(limit: number): Band {
    for (const band of this.list) if (band.toLimit === null || limit <= band.toLimit) return band;
    return this.list[this.list.length - 1];
  }
}

export function parseBands(raw: unknown, source = 'warmup-bands'): Bands {
  const parsed = bandsFileSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(formatZodIssue(source, parsed.error.issues[0]));
  return new Bands(parsed.data.bands);
}

const loaded = new Map<string, Bands>();

/** The bands of `file`, read and validated on first use (the backend asks for them at start). */
export function bandsFrom(file: string): Bands {
  let bands = loaded.get(file);
  if (!bands) {
    bands = parseBands(readJson(file), file);
    loaded.set(file, bands);
  }
  return bands;
}
