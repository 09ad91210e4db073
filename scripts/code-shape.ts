// Prints the shape of a source folder: how deep its imports among its own files go, its longest
// functions and its files over 400 lines. Used to report a restructuring's before and after:
//   npm run shape -- src/backup
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const folder = resolve(process.argv[2] ?? 'src');
const limit = Number(process.argv[3] ?? 10);

const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });

const all = files(folder);
const inside = new Set(all);
const imports = new Map<string, string[]>();
const functions: { where: string; name: string; lines: number }[] = [];
const sizes: { where: string; lines: number }[] = [];

for (const path of all) {
  const text = readFileSync(path, 'utf8');
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  sizes.push({ where: relative(process.cwd(), path), lines: lineOf(text.trimEnd().length) });
  const targets: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      node.moduleSpecifier.text.startsWith('.')
    ) {
      const target = resolve(dirname(path), node.moduleSpecifier.text);
      if (inside.has(target)) targets.push(target);
    }
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = lineOf(node.getStart(source));
      const lines = lineOf(node.end) - start + 1;
      functions.push({ where: `${relative(process.cwd(), path)}:${start}`, name: nameOf(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  imports.set(path, targets);
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name && ts.isIdentifier(named.name)) return named.name.text;
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isCallExpression(parent)) {
    const callee = parent.expression;
    const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : callee.getText();
    return `callback of ${name.length > 30 ? `${name.slice(0, 30)}…` : name}()`;
  }
  return '(anonymous)';
}

// Floors: a file that imports nothing inside the folder is on floor 1; otherwise one above the highest
// file it imports (a cycle counts once).
const floors = new Map<string, number>();
const floorOf = (path: string, seen: Set<string>): number => {
  const known = floors.get(path);
  if (known !== undefined) return known;
  if (seen.has(path)) return 0;
  seen.add(path);
  const floor = 1 + Math.max(0, ...(imports.get(path) ?? []).map((t) => floorOf(t, seen)));
  seen.delete(path);
  floors.set(path, floor);
  return floor;
};
for (const path of all) floorOf(path, new Set());

const depth = Math.max(...floors.values());
const top = [...floors].filter(([, f]) => f === depth).map(([p]) => relative(process.cwd(), p));
console.log(
  `${relative(process.cwd(), folder) || '.'}: ${all.length} files, import depth ${depth} (${top.join(', ')})`,
);
console.log('longest functions:');
for (const f of functions.sort((a, b) => b.lines - a.lines).slice(0, limit)) {
  console.log(`  ${String(f.lines).padStart(4)}  ${f.name}  ${f.where}`);
}
const large = sizes.filter((s) => s.lines > 400).sort((a, b) => b.lines - a.lines);
console.log(`files over 400 lines: ${large.length}`);
for (const s of large) console.log(`  ${String(s.lines).padStart(4)}  ${s.where}`);
