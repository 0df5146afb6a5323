// Every SQL statement of the reference backend lives in its domain's queries.ts (CONTRIBUTING, "Adding a
// backend domain"), and the service layer's (src/access/service/) in its queries files (queries.ts,
// audit-queries.ts, ...): the rules read as decisions, and what a module asks of the database is in one
// place. This walks every other source file of those folders with the TypeScript parser, so comments may
// name statements freely, and lists each string or template literal that holds SQL and each `.query(` call.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BACKEND = join(ROOT, 'src/backend');
const SERVICE = join(ROOT, 'src/access/service');

/**
 * What only SQL says, written the way the code writes SQL (upper case): a statement's opening, a row
 * lock, an upsert or a RETURNING clause. Fragments count too: `FOR SHARE OF o` kept apart and joined
 * to a statement later is SQL all the same.
 */
const SQL =
  /\b(SELECT\s|INSERT\s+INTO\b|UPDATE\s+\w+(\s+\w+)?\s+SET\b|DELETE\s+FROM\b|FOR\s+(UPDATE|SHARE)\b|ON\s+CONFLICT\b|RETURNING\b)/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The text of a literal as written (a template's parts without its substitutions), or null for other nodes. */
function literalText(node: ts.Node): string | null {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node))
    return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
  return null;
}

/** `file:line: what` for each SQL literal and each `.query(` call of the file. */
function sqlOutsideQueries(path: string, text: string): string[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node) =>
    `${relative(ROOT, path)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node): void => {
    const literal = literalText(node);
    if (literal !== null) {
      const match = SQL.exec(literal);
      if (match) found.push(`${at(node)}: SQL (${match[0].trim()}) in a literal`);
      // A template's substitutions may hold literals of their own.
      if (ts.isTemplateExpression(node)) node.templateSpans.forEach((s) => visit(s.expression));
      return;
    }
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'query'
    ) {
      found.push(`${at(node)}: a .query( call`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('SQL', () => {
  it('of the backend sits in queries.ts only', () => {
    const offenders = sourceFiles(BACKEND)
      .filter((path) => !path.endsWith('/queries.ts'))
      .flatMap((path) => sqlOutsideQueries(path, readFileSync(path, 'utf8')));
    expect(offenders, `move these to the domain's queries.ts:\n${offenders.join('\n')}`).toEqual([]);
  });

  it('of the service layer sits in its queries files only', () => {
    const offenders = sourceFiles(SERVICE)
      .filter((path) => !path.endsWith('queries.ts'))
      .flatMap((path) => sqlOutsideQueries(path, readFileSync(path, 'utf8')));
    expect(offenders, `move these to src/access/service/queries.ts:\n${offenders.join('\n')}`).toEqual([]);
  });

  it('is recognized in literals and calls, not in comments', () => {
    const sample = [
      '// SELECT id FROM accounts FOR UPDATE: a comment may say so',
      "const lock = { share: 'FOR SHARE OF o' };",
      'const read = (db, id) => db.query(`SELECT id FROM t WHERE id = ${id}`);',
      "const write = `UPDATE accounts a SET x = 1 ${'RETURNING id'}`;",
      "const message = 'select a workspace, then update its name';",
      'const params = ctx.query;',
    ].join('\n');
    const found = sqlOutsideQueries(join(BACKEND, 'sample.ts'), sample).map((f) => f.replace(/^[^:]+:/, ''));
    expect(found).toEqual([
      '2: SQL (FOR SHARE) in a literal',
      '3: a .query( call',
      '3: SQL (SELECT) in a literal',
      '4: SQL (UPDATE accounts a SET) in a literal',
      '4: SQL (RETURNING) in a literal',
    ]);
  });
});
