// Type-checks every TypeScript example in README.md and docs/*.md against the built package.
//
//   npm run build && npm run docs:check
//
// Each ```ts (or ```typescript) block becomes its own module in .docs-examples/ (gitignored),
// named after its markdown file and line, and `tsc --noEmit` checks them all at once. Inside the
// repository, `import … from 'nest-rate-limit'` resolves through package.json's `exports` to
// dist/index.d.ts, as it does for users, so an example that drifts from the published types fails.
//
// A block is checked as written. A fragment that needs imports or declarations it does not show
// (an options object, a method body) takes a hidden prelude: an HTML comment just before the
// fence, blank lines allowed in between, whose lines are put in front of the block:
//
//   <!-- ts-prelude
//   import { RateLimitModule } from 'nest-rate-limit';
//   declare const secret: string;
//   -->
//   ```ts
//   RateLimitModule.forRoot({ skipIf: (ctx) => ctx.getType() === 'http' && secret !== '' });
//   ```
//
// Errors name the markdown file and line; an error inside a prelude names the comment's line.
// Exit code 0 when every block compiles, 1 otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const scratch = join(root, '.docs-examples');

const FENCE = /^(\s*)(`{3,}|~{3,})\s*(ts|typescript)\s*$/;
const PRELUDE_START = /^\s*<!--\s*ts-prelude\s*$/;
const PRELUDE_END = /^\s*-->\s*$/;

/** The markdown files whose examples are checked, relative to the root. */
function markdownFiles() {
  const docs = join(root, 'docs');
  const pages = existsSync(docs)
    ? readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return ['README.md', ...pages];
}

/**
 * The ts blocks of one file: `{ codeLine, code, preludeLine, prelude }`, lines 1-based.
 * `codeLine` is the line of the block's first code line.
 */
function extractBlocks(text) {
  const lines = text.split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) {
      // Skip other fenced blocks whole, so a ```ts inside a ```markdown sample is not taken.
      const other = /^\s*(`{3,}|~{3,})/.exec(lines[i]);
      if (other) i = closingFence(lines, i, other[1]);
      continue;
    }
    const end = closingFence(lines, i, open[2]);
    const indent = open[1].length;
    const code = lines.slice(i + 1, end).map((line) => line.slice(indent));
    blocks.push({ codeLine: i + 2, code, ...preludeBefore(lines, i) });
    i = end;
  }
  return blocks;
}

/** The index of the line closing a fence opened at `start` with `marker`. */
function closingFence(lines, start, marker) {
  for (let j = start + 1; j < lines.length; j++) {
    const trimmed = lines[j].trim();
    if (trimmed.startsWith(marker[0].repeat(marker.length)) && /^[`~]+$/.test(trimmed)) return j;
  }
  return lines.length;
}

/** A `<!-- ts-prelude … -->` comment ending just before line index `fence`, if any. */
function preludeBefore(lines, fence) {
  let j = fence - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0 || !PRELUDE_END.test(lines[j])) return { preludeLine: 0, prelude: [] };
  const end = j;
  while (j >= 0 && !PRELUDE_START.test(lines[j])) {
    if (lines[j].includes('<!--') && j !== end) return { preludeLine: 0, prelude: [] };
    j--;
  }
  if (j < 0) return { preludeLine: 0, prelude: [] };
  return { preludeLine: j + 1, prelude: lines.slice(j + 1, end) };
}

const tsconfig = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    moduleDetection: 'force',
    lib: ['ES2022'],
    types: ['node'],
    strict: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    // Examples show one piece of an app; names they declare and never use are fine.
    noUnusedLocals: false,
    noUnusedParameters: false,
  },
  include: ['./*.ts'],
};

function main() {
  if (!existsSync(join(root, 'dist/index.d.ts'))) {
    console.error('docs:check: dist/index.d.ts is missing; run `npm run build` first');
    return 1;
  }
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2) + '\n');

  // Generated file name → where each of its lines came from.
  const origins = new Map();
  let count = 0;
  for (const file of markdownFiles()) {
    const blocks = extractBlocks(readFileSync(join(root, file), 'utf8'));
    for (const block of blocks) {
      const name = `${file.replace(/[/.]/g, '_')}_L${block.codeLine}.ts`;
      const lines = [...block.prelude, ...block.code];
      const where = [
        ...block.prelude.map(() => ({ file, line: block.preludeLine, prelude: true })),
        ...block.code.map((_, k) => ({ file, line: block.codeLine + k, prelude: false })),
      ];
      writeFileSync(join(scratch, name), lines.join('\n') + '\n');
      origins.set(name, where);
      count++;
    }
  }

  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const run = spawnSync(
    process.execPath,
    [tsc, '--noEmit', '--pretty', 'false', '-p', join(scratch, 'tsconfig.json')],
    { cwd: root, encoding: 'utf8' },
  );
  const output = `${run.stdout}${run.stderr}`.trim();
  if (run.status === 0) {
    console.log(`docs:check: ${count} TypeScript examples compile against dist/`);
    return 0;
  }
  console.error(output === '' ? `tsc exited with ${run.status}` : translate(output, origins));
  console.error(`\ndocs:check: examples failed to compile (${count} checked)`);
  return 1;
}

/** Rewrites tsc's `file(line,col): error …` lines to name the markdown file and line. */
function translate(output, origins) {
  const located = /^(.+?)\((\d+),(\d+)\): (error|warning) (TS\d+: .*)$/;
  return output
    .split('\n')
    .map((line) => {
      const match = located.exec(line);
      if (!match) return line;
      const [, path, lineNo, col, level, message] = match;
      const name = relative(scratch, resolve(root, path));
      const where = origins.get(name)?.[Number(lineNo) - 1];
      if (where === undefined) return line;
      const place = where.prelude
        ? `${where.file}:${where.line} (in the ts-prelude)`
        : `${where.file}:${where.line}:${col}`;
      return `${place}: ${level} ${message}`;
    })
    .join('\n');
}

process.exitCode = main();
