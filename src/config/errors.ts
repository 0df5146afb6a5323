import type { z } from 'zod';

/** A configuration problem; its message is one line naming the field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function formatZodIssue(what: string, issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return `${what}: invalid`;
  let path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as { keys: string[] }).keys;
    path = [path, keys[0]].filter(Boolean).join('.');
    return `${what} ${path}: unknown field`;
  }
  return `${what} ${path || '(root)'}: ${issue.message}`;
}
