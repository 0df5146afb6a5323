// The README and docs/ name only what the repository holds: every relative link (and its #anchor, in a
// Markdown page) and every path written in backticks under docs/, deploy/ or bench/ must exist, and no
// page may send a reader to a document outside the repository. The README stays short enough to read
// in five minutes; the reference lives in docs/.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const README_MAX_LINES = 220;
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The page without its fenced code blocks: a link-like text in a shell example is not a link. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of prose(readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

interface Ref {
  /** The page a relative link is resolved from (the root's README.md for repository-relative paths). */
  from: string;
  target: string;
}

/** What a page's reference names that the repository does not hold, or null. */
function problem(ref: Ref): string | null {
  const [pathPart, anchor] = ref.target.split('#', 2) as [string, string | undefined];
  const path = decodeURIComponent(pathPart.split('?')[0]!);
  const file = path === '' ? join(ROOT, ref.from) : resolve(ROOT, dirname(ref.from), path);
  if (relative(ROOT, file).startsWith('..')) return 'points outside the repository';
  if (!existsSync(file)) return 'does not exist';
  if (anchor && file.endsWith('.md') && statSync(file).isFile() && !anchors(file).has(anchor)) {
    return `has no heading #${anchor}`;
  }
  return null;
}

function links(page: string): Ref[] {
  const text = prose(readFileSync(join(ROOT, page), 'utf8'));
  const refs: Ref[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    if (!/^[a-z][a-z0-9+.-]*:/i.test(m[1]!)) refs.push({ from: page, target: m[1]! });
  }
  return refs;
}

/** Paths in backticks under docs/, deploy/ or bench/ (repository-relative), placeholders left out. */
function backticked(page: string): Ref[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  const refs: Ref[] = [];
  for (const m of text.matchAll(/`((?:docs|deploy|bench)\/[^`\s]*)[^`]*`/g)) {
    const target = m[1]!.replace(/[.,:;)]+$/, '');
    if (/[<>{}*$]/.test(target)) continue;
    refs.push({ from: 'README.md', target });
  }
  return refs;
}

describe('the README and docs/ name only what the repository holds', () => {
  it(`README.md has at most ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it.each(PAGES)('%s: every relative link exists', (page) => {
    const broken = links(page)
      .map((r) => ({ ...r, why: problem(r) }))
      .filter((r) => r.why)
      .map((r) => `${r.target} ${r.why}`);
    expect(broken).toEqual([]);
  });

  it.each(PAGES)('%s: every backticked docs/, deploy/ or bench/ path exists', (page) => {
    const missing = backticked(page)
      .filter((r) => problem(r))
      .map((r) => r.target);
    expect(missing).toEqual([]);
  });

  it.each(PAGES)('%s: names no document kept outside the repository', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    // The interfaces' source documents were once cited as "CONTRACT section N" and by ../shared paths.
    const outside = [...text.matchAll(/\.\.\/shared\b|\bCONTRACT(?:\.md)?\b(?: section \d+)?/g)].map((m) => m[0]);
    expect(outside).toEqual([]);
  });
});
