// Lists the import circles of the sources (default `src`), type imports and re-exports included: ESLint's
// `import-x/no-cycle` skips `import type`, yet a circle of types still ties the modules' designs together
// (neither can be read or moved without the other). Each strongly connected group of files is one circle.
// Exit code 1 when there is any, so a test or CI can hold the count at zero.
//
//   npx tsx scripts/import-cycles.ts [dir ...]
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { sourceFiles } from './source-files.js';

/** The relative specifiers a file imports or re-exports, static or dynamic, types included. */
function specifiers(file: string): string[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal;
      if (ts.isStringLiteral(literal)) found.push(literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found.filter((s) => s.startsWith('.'));
}

/** The file a relative specifier names (`./x.js` is `./x.ts` in the sources), or null outside the set. */
function resolveSpecifier(from: string, spec: string, files: Set<string>): string | null {
  const base = path.resolve(path.dirname(from), spec);
  const candidates = [
    base,
    base.replace(/\.js$/, '.ts'),
    base.replace(/\.mjs$/, '.mts'),
    `${base}.ts`,
    path.join(base, 'index.ts'),
  ];
  return candidates.find((c) => files.has(c)) ?? null;
}

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return out;
}

export function importCircles(dirs: string[]): string[][] {
  const files = new Set(dirs.flatMap((d) => sourceFiles(path.resolve(d))));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = specifiers(file)
      .map((s) => resolveSpecifier(file, s, files))
      .filter((t): t is string => t !== null);
    graph.set(file, [...new Set(targets)]);
  }
  return circles(graph).map((group) => group.map((f) => path.relative(process.cwd(), f)));
}

if (process.argv[1] && import.meta.url === `file://${path.resolve(process.argv[1])}`) {
  const dirs = process.argv.slice(2);
  const found = importCircles(dirs.length > 0 ? dirs : ['src']);
  for (const group of found) console.log(`${group.length} files: ${group.join(' ')}`);
  console.log(`${found.length} import circle(s), type imports included`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
