// Checks every TypeScript example in README.md and docs/*.md against the built package, in both
// module systems, and runs the recipes in real Nest apps.
//
//   npm run build && npm run docs:check
//   npm run docs:check -- login widgets     # every block compiles; only these recipes run
//
// Each ```ts (or ```typescript) block becomes its own module, twice: in .docs-examples/esm/ (a
// package of `"type": "module"`) and in .docs-examples/cjs/ (`"type": "commonjs"`), and tsc
// compiles each folder as Node does (module NodeNext). `import … from 'nest-rate-limit'` resolves
// through .docs-examples/node_modules/nest-rate-limit, a link to the repository, and so through
// package.json's `exports` to dist/, as it does for users: an example that drifts from the
// published types, or that only one module system accepts (top-level await, import.meta), fails.
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
// A recipe is a block that runs: a `<!-- recipe: NAME -->` line before it (and before its
// prelude) names it, and scripts/docs-examples/recipes/ holds the scenario that imports it as
// `./NAME.js`, builds an app around it and asserts what the text promises (see recipes.mjs).
// Before any of that, every name the package exports (from either entry) must be mentioned in
// README.md or docs/, and there may be at most 45 of them (see public-names.mjs).
//
// Errors name the markdown file and line and the module system; an error inside a prelude names
// the comment's line. Exit code 0 when every block compiles and every recipe keeps its promise.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { extractBlocks, markdownFiles } from './markdown.mjs';
import { checkPublicNames } from './public-names.mjs';
import { planRecipes, runRecipes, writeRecipes } from './recipes.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const scratch = join(root, '.docs-examples');

/** The two ways a user's app loads the package. */
const MODULE_SYSTEMS = [
  { id: 'esm', label: 'ES module', type: 'module' },
  { id: 'cjs', label: 'CommonJS', type: 'commonjs' },
];

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
    outDir: 'out',
    rootDir: '.',
    // Examples show one piece of an app; names they declare and never use are fine.
    noUnusedLocals: false,
    noUnusedParameters: false,
  },
  include: ['./examples/*.ts', './recipes/*.ts'],
};

function main() {
  if (!existsSync(join(root, 'dist/index.d.ts'))) {
    console.error('docs:check: dist/index.d.ts is missing; run `npm run build` first');
    return 1;
  }
  // Every public name is documented, and there are not too many (public-names.mjs).
  const names = checkPublicNames(root);
  if (names.errors.length > 0) {
    for (const error of names.errors) console.error(`docs:check: ${error}`);
    return 1;
  }
  console.log(`docs:check: ${names.total} public names, each mentioned in README.md or docs/`);
  const blocks = markdownFiles(root).flatMap((file) => extractBlocks(root, file));
  const plan = planRecipes(root, blocks);
  if (plan.errors.length > 0) {
    for (const error of plan.errors) console.error(error);
    console.error('\ndocs:check: recipes and their scenarios do not match');
    return 1;
  }
  // `npm run docs:check -- login widgets` runs only those scenarios (every block still compiles).
  const only = process.argv.slice(2);
  const unknown = only.filter((name) => !plan.scenarios.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`docs:check: no scenario named ${unknown.join(', ')}`);
    return 1;
  }
  if (only.length > 0) plan.scenarios = plan.scenarios.filter((s) => only.includes(s.name));

  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(join(scratch, 'node_modules'), { recursive: true });
  symlinkSync('../..', join(scratch, 'node_modules/nest-rate-limit'), 'dir');

  let failed = false;
  for (const system of MODULE_SYSTEMS) {
    const dir = join(scratch, system.id);
    mkdirSync(join(dir, 'examples'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: system.type }) + '\n');
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2) + '\n');
    const origins = new Map();
    for (const block of blocks) {
      if (block.recipe !== undefined && block.recipe !== 'none') continue;
      const name = `examples/${block.file.replace(/[/.]/g, '_')}_L${block.codeLine}.ts`;
      writeBlock(dir, name, block, origins);
    }
    writeRecipes(root, dir, plan, origins, (name, block) => writeBlock(dir, name, block, origins));
    if (!compile(dir, system, origins)) failed = true;
  }
  if (failed) {
    console.error(`\ndocs:check: examples failed to compile (${blocks.length} checked)`);
    return 1;
  }
  console.log(
    `docs:check: ${blocks.length} TypeScript examples compile against dist/ as ES modules and as CommonJS`,
  );
  return runRecipes(scratch, MODULE_SYSTEMS, plan) ? 0 : 1;
}

/** Writes a block (prelude, then code) as `name` in `dir`, remembering where each line came from. */
function writeBlock(dir, name, block, origins) {
  const lines = [...block.prelude, ...block.code];
  origins.set(name, [
    ...block.prelude.map(() => ({ file: block.file, line: block.preludeLine, prelude: true })),
    ...block.code.map((_, k) => ({ file: block.file, line: block.codeLine + k, prelude: false })),
  ]);
  writeFileSync(join(dir, name), lines.join('\n') + '\n');
}

/** Compiles one module system's folder to out/; prints its errors and answers false on any. */
function compile(dir, system, origins) {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '--pretty', 'false', '-p', dir], {
    cwd: root,
    encoding: 'utf8',
  });
  if (run.status === 0) return true;
  const output = `${run.stdout}${run.stderr}`.trim();
  console.error(
    output === '' ? `tsc exited with ${run.status}` : translate(output, dir, system, origins),
  );
  return false;
}

/** Rewrites tsc's `file(line,col): error …` lines to name the source file, line and module system. */
function translate(output, dir, system, origins) {
  const located = /^(.+?)\((\d+),(\d+)\): (error|warning) (TS\d+: .*)$/;
  return output
    .split('\n')
    .map((line) => {
      const match = located.exec(line);
      if (!match) return line;
      const [, path, lineNo, col, level, message] = match;
      const name = relative(dir, resolve(root, path));
      const where = origins.get(name)?.[Number(lineNo) - 1];
      if (where === undefined) return `${line} (${system.label})`;
      const place = where.prelude
        ? `${where.file}:${where.line} (in the ts-prelude)`
        : `${where.file}:${where.line}:${col}`;
      return `${place} (${system.label}): ${level} ${message}`;
    })
    .join('\n');
}

process.exitCode = main();
