// What a command prints: JSON for scripts (`--json`, one document on stdout), lines for people.

/** The command could not be carried out (a key, user, workspace or organization that is not there): exit code 1. */
export class CommandError extends Error {
  override name = 'CommandError';
}

export function output(json: boolean, data: unknown, lines: string[]): void {
  process.stdout.write(json ? JSON.stringify(data) + '\n' : lines.join('\n') + '\n');
}

/** Columns padded to their widest cell; null and undefined print as `-`. */
export function table(head: string[], rows: unknown[][]): string[] {
  const cells = [head, ...rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
}

export function iso(t: Date | string): string {
  return new Date(t).toISOString();
}
