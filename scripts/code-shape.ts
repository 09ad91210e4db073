// Prints the shape of a source folder: how deep its imports among its own files go, its import cycles, its
// longest functions and its files over 400 lines; for src/ also the layer rules (imports that run upward,
// a capability importing another, a capability's parts importing each other's internals instead of its
// model) and the files outside each capability that name it. Used to report a restructuring's before and
// after:
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
    return /\.tsx?$/.test(path) && !path.endsWith('.d.ts') ? [path] : [];
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
    // `await import('./x.ts')`: a command loaded when it runs imports it all the same.
    if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0]) &&
      node.arguments[0].text.startsWith('.')
    ) {
      const target = resolve(dirname(path), node.arguments[0].text);
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

// Import cycles: strongly connected groups of more than one file (Tarjan).
const cycles: string[][] = [];
{
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of imports.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(relative(process.cwd(), w));
      } while (w !== v);
      if (group.length > 1) cycles.push(group.sort());
    }
  };
  for (const path of all) if (!index.has(path)) connect(path);
}
console.log(`import cycles: ${cycles.length}`);
for (const c of cycles) console.log(`  ${c.join(' <-> ')}`);

// Layers, for src/ only: the runtime (everything not below) < a capability < the console and the CLI.
const src = resolve('src');
if (folder === src) {
  const capabilities = ['scopes', 'tenancy', 'search', 'backup'];
  const where = (path: string): { layer: number; capability?: string; part?: string } => {
    const [top, second] = relative(src, path).split('/');
    if (top && capabilities.includes(top)) {
      const part = second?.replace(/\.tsx?$/, '');
      return { layer: 1, capability: top, ...(part ? { part } : {}) };
    }
    if (top === 'console' || top === 'cli' || top === 'capabilities.ts') return { layer: 2 };
    return { layer: 0 };
  };
  // Parts any part of a capability may import: its contract, its pure rules, its entry point, and a room
  // that itself imports nothing of the capability but those (a library of its own, e.g. backup's velero/).
  const base = new Set(['model', 'policy', 'index']);
  // The wiring of a capability may import any of its parts: its entry point, its commands, and the
  // components it starts as processes of their own (search's API and collector).
  const composing = new Set(['index', 'cli', 'components']);
  const leaf = new Set<string>();
  const parts = new Map<string, Set<string>>();
  for (const [path, targets] of imports) {
    const from = where(path);
    if (!from.capability || !from.part) continue;
    const key = `${from.capability}/${from.part}`;
    const deps = parts.get(key) ?? new Set<string>();
    for (const t of targets) {
      const to = where(t);
      if (to.capability === from.capability && to.part && to.part !== from.part) deps.add(to.part);
    }
    parts.set(key, deps);
  }
  for (const [key, deps] of parts) if ([...deps].every((d) => base.has(d))) leaf.add(key);
  const shared = (capability: string, part: string | undefined) =>
    part !== undefined && (base.has(part) || leaf.has(`${capability}/${part}`));
  const upward: string[] = [];
  const across: string[] = [];
  const internals: string[] = [];
  const namers = new Map<string, Set<string>>(capabilities.map((c) => [c, new Set<string>()]));
  for (const [path, targets] of imports) {
    const from = where(path);
    for (const target of targets) {
      const to = where(target);
      const line = `${relative(process.cwd(), path)} -> ${relative(process.cwd(), target)}`;
      if (to.capability && to.capability !== from.capability)
        namers.get(to.capability)!.add(relative(process.cwd(), path));
      if (to.layer > from.layer) upward.push(line);
      else if (from.capability && to.capability && from.capability !== to.capability) across.push(line);
      else if (
        from.capability &&
        from.capability === to.capability &&
        from.part !== to.part &&
        !composing.has(from.part ?? '') &&
        !shared(to.capability, to.part)
      )
        internals.push(line);
    }
  }
  console.log(`imports that run upward (runtime -> capability -> console/CLI): ${upward.length}`);
  for (const l of upward) console.log(`  ${l}`);
  console.log(`imports from one capability into another: ${across.length}`);
  for (const l of across) console.log(`  ${l}`);
  console.log(`imports between a capability's parts past its model/policy: ${internals.length}`);
  for (const l of internals.slice(0, limit)) console.log(`  ${l}`);
  for (const [capability, files] of namers) {
    console.log(
      `files outside src/${capability}/ that import it: ${files.size} (${[...files].sort().join(', ')})`,
    );
  }
}
