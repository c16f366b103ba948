/**
 * The graph of relative imports between the files of a source tree, read with the TypeScript
 * parser: `import` and `export … from` (types too), `import()` with a literal, and `import('…')`
 * types. Imports of packages are not in it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** One file's import of another, both as paths relative to the tree's root, with `/`. */
export interface Import {
  readonly from: string;
  readonly to: string;
}

/** Every `.ts` file under `root`, relative to it, with `/`. */
export function sourceFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(root, path);
    return entry.name.endsWith('.ts') ? [relative(root, path).split(sep).join('/')] : [];
  });
}

/** The relative imports of every `.ts` file under `root`. Throws on one that names no file. */
export function importsUnder(root: string): Import[] {
  return sourceFiles(root).flatMap((from) =>
    specifiersOf(join(root, from))
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => ({ from, to: resolveImport(root, from, specifier) })),
  );
}

/** The module specifiers a file names, in the order they appear. */
export function specifiersOf(path: string): string[] {
  const source = ts.createSourceFile(
    path,
    readFileSync(path, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const found: string[] = [];
  const literal = (node: ts.Node | undefined) => {
    if (node !== undefined && ts.isStringLiteralLike(node)) found.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      literal(node.moduleSpecifier);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference)
    ) {
      literal(node.moduleReference.expression);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      literal(node.arguments[0]);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      literal(node.argument.literal);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The file `specifier` names from `from`: `./x.js` is `./x.ts` in the sources. */
function resolveImport(root: string, from: string, specifier: string): string {
  const base = resolve(root, dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), base + '.ts', join(base, 'index.ts'), base];
  const found = candidates.find((path) => path.endsWith('.ts') && existsSync(path));
  if (found === undefined) throw new Error(`${from} imports ${specifier}, which names no file`);
  return relative(root, found).split(sep).join('/');
}

/**
 * The import cycles among `imports`: one per group of files that reach each other (a strongly
 * connected component of more than one file, or a file that imports itself), each written as
 * the path that goes round it, its first file repeated at the end.
 */
export function cyclesOf(imports: readonly Import[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of imports) next.set(from, [...(next.get(from) ?? []), to]);
  return components(next)
    .filter((group) => group.length > 1 || next.get(group[0])?.includes(group[0]))
    .map((group) => roundTrip(group, next));
}

// Tarjan's algorithm: the strongly connected components of the graph.
function components(next: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const to of next.get(file) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(file, Math.min(low.get(file)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file)!, index.get(to)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    found.push(group.sort());
  };
  for (const file of [...next.keys()].sort()) if (!index.has(file)) connect(file);
  return found;
}

/** A shortest path from the group's first file round to it again, through the group's files. */
function roundTrip(
  group: readonly string[],
  next: ReadonlyMap<string, readonly string[]>,
): string[] {
  const start = group[0];
  const inGroup = new Set(group);
  const cameFrom = new Map<string, string>([[start, start]]);
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const file = queue[i];
    for (const to of next.get(file) ?? []) {
      if (to === start) {
        const path = [start];
        for (let at = file; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (inGroup.has(to) && !cameFrom.has(to)) {
        cameFrom.set(to, file);
        queue.push(to);
      }
    }
  }
  throw new Error(`${start} is in a cycle that does not come back to it`);
}
