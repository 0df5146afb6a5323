// Lists the longest functions of the sources (default `src`), longest first: a structural measure for
// reviews (a function that keeps growing is one to split). Lines are counted from the function's first
// to its last line, comments included, as a reader scrolls them.
//
//   npx tsx scripts/longest-functions.ts [dir ...] [--top N]
import fs from 'node:fs';
import ts from 'typescript';
import { sourceFiles } from './source-files.js';

interface FunctionLength {
  file: string;
  line: number;
  name: string;
  lines: number;
}

/** The name a reader would search for: the declaration's own, else what it is assigned or passed to. */
function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
    return parent.name.getText(sf);
  }
  if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

export function functionLengths(files: string[]): FunctionLength[] {
  const found: FunctionLength[] = [];
  for (const file of files) {
    const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
        const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        found.push({ file, line: start + 1, name: nameOf(node, sf), lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found.sort((a, b) => b.lines - a.lines);
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt === -1 ? 10 : Number(args[topAt + 1]);
const dirs = args.filter((arg, i) => arg !== '--top' && i !== topAt + 1);
const files = (dirs.length > 0 ? dirs : ['src']).flatMap(sourceFiles);
for (const f of functionLengths(files).slice(0, top)) {
  console.log(`${String(f.lines).padStart(5)}  ${f.file}:${f.line}  ${f.name}`);
}
