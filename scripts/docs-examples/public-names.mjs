// The package's public names, checked against the docs: every name an entry of package.json's
// `exports` declares (read from its built .d.ts with the TypeScript compiler) must be mentioned in
// README.md or docs/*.md, in inline code or in a code block, and all entries together may export
// at most MAX_PUBLIC_NAMES. check.mjs runs it first; alone:
//
//   npm run build && node scripts/docs-examples/public-names.mjs
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { markdownFiles } from './markdown.mjs';

export const MAX_PUBLIC_NAMES = 45;

/** `[{ entry, file, names }]`: each entry of `exports` with types, and the names it exports. */
export function publicNames(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const entries = Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === 'object' && target.types !== undefined)
    .map(([entry, target]) => ({
      entry: entry === '.' ? pkg.name : `${pkg.name}/${entry.replace(/^\.\//, '')}`,
      file: resolve(root, target.types),
    }));
  const program = ts.createProgram(
    entries.map((e) => e.file),
    { noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext },
  );
  const checker = program.getTypeChecker();
  return entries.map(({ entry, file }) => {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`${file} is missing; run \`npm run build\` first`);
    const module = checker.getSymbolAtLocation(source);
    const names = module === undefined ? [] : checker.getExportsOfModule(module).map((s) => s.name);
    return { entry, file, names: [...new Set(names)].sort() };
  });
}

/** The code of the docs: fenced blocks whole, and inline code spans of the prose. */
function codeOfDocs(root) {
  const parts = [];
  for (const file of markdownFiles(root)) {
    let fence;
    for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence !== undefined) {
        if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length)
          fence = undefined;
        else parts.push(line);
      } else if (marker !== undefined) {
        fence = marker;
      } else {
        for (const span of line.matchAll(/(`+)(.+?)\1/g)) parts.push(span[2]);
      }
    }
  }
  return parts.join('\n');
}

/** The errors of the check: a name the docs never mention, or too many names. */
export function checkPublicNames(root) {
  const entries = publicNames(root);
  const code = codeOfDocs(root);
  const errors = [];
  for (const { entry, names } of entries) {
    for (const name of names) {
      if (!new RegExp(`(?<![\\w$])${name.replace(/\$/g, '\\$')}(?![\\w$])`).test(code))
        errors.push(
          `${entry} exports \`${name}\`, which neither README.md nor docs/ mentions: document it (docs/api.md lists every public name) or stop exporting it`,
        );
    }
  }
  const total = entries.reduce((sum, e) => sum + e.names.length, 0);
  if (total > MAX_PUBLIC_NAMES) {
    const counts = entries.map((e) => `${e.entry}: ${e.names.length}`).join(', ');
    errors.push(`the package exports ${total} names (${counts}); at most ${MAX_PUBLIC_NAMES}`);
  }
  return { entries, total, errors };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const { total, errors } = checkPublicNames(root);
  for (const error of errors) console.error(`docs:check: ${error}`);
  if (errors.length === 0)
    console.log(`docs:check: ${total} public names, each mentioned in README.md or docs/`);
  process.exitCode = errors.length === 0 ? 0 : 1;
}
