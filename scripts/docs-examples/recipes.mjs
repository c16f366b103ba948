// The recipes of the docs, run: each block marked `<!-- recipe: NAME -->` is written as
// recipes/NAME.ts beside the scenarios of scripts/docs-examples/recipes/ (`*.scenario.ts`, with
// their helpers), compiled with them in each module system, and run by a generated recipes/run.ts
// on every adapter the scenario names. Every block of docs/recipes.md and of a `## Recipes`
// section must be a recipe some scenario imports, or say why none runs it:
// `<!-- recipe: none: <why> -->`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HARNESS = 'scripts/docs-examples/recipes';
const SCENARIO = /\.scenario\.ts$/;

/** Matches the marked blocks with the scenarios: `{ blocks, scenarios, helpers, errors }`. */
export function planRecipes(root, blocks) {
  const errors = [];
  const marked = new Map();
  for (const block of blocks) {
    const where = `${block.file}:${block.recipeLine || block.codeLine}`;
    if (block.recipe === undefined) {
      if (block.inRecipes)
        errors.push(
          `${where}: a recipe no scenario runs. Put \`<!-- recipe: NAME -->\` before it and a scenario importing ./NAME.js in ${HARNESS}/ (see docs/development.md), or say why it cannot run: \`<!-- recipe: none: <why> -->\``,
        );
    } else if (block.recipe === 'none') {
      if (!block.skipReason)
        errors.push(`${where}: \`recipe: none: <why>\` says why no scenario runs it`);
    } else if (marked.has(block.recipe)) {
      const first = marked.get(block.recipe);
      errors.push(`${where}: recipe "${block.recipe}" is also ${first.file}:${first.recipeLine}`);
    } else {
      marked.set(block.recipe, block);
    }
  }

  const files = readdirSync(join(root, HARNESS)).filter((f) => f.endsWith('.ts'));
  const scenarios = files
    .filter((f) => SCENARIO.test(f))
    .sort()
    .map((file) => {
      const source = readFileSync(join(root, HARNESS, file), 'utf8');
      const imports = [...source.matchAll(/from '\.\/([a-z0-9-]+)\.js'/g)].map((m) => m[1]);
      return { file, name: file.replace(SCENARIO, ''), source, imports };
    });
  const helpers = files.filter((f) => !SCENARIO.test(f)).sort();
  const helperNames = new Set(helpers.map((f) => f.replace(/\.ts$/, '')));
  const used = new Set();
  for (const scenario of scenarios) {
    for (const name of scenario.imports) {
      if (helperNames.has(name)) continue;
      if (!marked.has(name))
        errors.push(
          `${HARNESS}/${scenario.file}: imports ./${name}.js, but no block is marked \`<!-- recipe: ${name} -->\``,
        );
      used.add(name);
    }
  }
  for (const [name, block] of marked) {
    if (!used.has(name))
      errors.push(
        `${block.file}:${block.recipeLine}: recipe "${name}" is run by no scenario: add ${HARNESS}/<name>.scenario.ts importing ./${name}.js`,
      );
  }
  return { blocks: marked, scenarios, helpers, errors };
}

/** Writes the recipe blocks, the scenarios, their helpers and run.ts into `dir`/recipes. */
export function writeRecipes(root, dir, plan, origins, writeBlock) {
  mkdirSync(join(dir, 'recipes'), { recursive: true });
  for (const [name, block] of plan.blocks) writeBlock(`recipes/${name}.ts`, block);
  for (const file of [...plan.helpers, ...plan.scenarios.map((s) => s.file)]) {
    const source = readFileSync(join(root, HARNESS, file), 'utf8');
    origins.set(
      `recipes/${file}`,
      source.split('\n').map((_, k) => ({ file: `${HARNESS}/${file}`, line: k + 1 })),
    );
    writeFileSync(join(dir, 'recipes', file), source);
  }
  const run = [
    "import { runScenarios } from './support.js';",
    ...plan.scenarios.map((s, k) => `import { scenario as s${k} } from './${s.name}.scenario.js';`),
    '',
    'void runScenarios([',
    ...plan.scenarios.map((s, k) => `  ['${s.name}', s${k}, '${blocksOf(plan, s)}'],`),
    ']);',
  ];
  writeFileSync(join(dir, 'recipes/run.ts'), run.join('\n') + '\n');
}

/** Where the blocks a scenario runs are: `docs/recipes.md:22, docs/recipes.md:104`. */
function blocksOf(plan, scenario) {
  return scenario.imports
    .filter((name) => plan.blocks.has(name))
    .map((name) => `${plan.blocks.get(name).file}:${plan.blocks.get(name).codeLine}`)
    .join(', ');
}

/** Runs the compiled scenarios of each module system, one process each; true when all pass. */
export function runRecipes(scratch, systems, plan) {
  // Without REDIS_URL, which the docs' modules read as they load, limits are kept in memory: the
  // recipes need no Redis.
  const env = { ...process.env };
  delete env.REDIS_URL;
  let passed = true;
  for (const system of systems) {
    console.log(`\nRecipes as ${system.label} (${plan.scenarios.length} scenarios):`);
    const run = spawnSync(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', 'out/recipes/run.js', system.id],
      { cwd: join(scratch, system.id), env, stdio: 'inherit', timeout: 10 * 60_000 },
    );
    if (run.status !== 0) {
      passed = false;
      console.error(`Recipes as ${system.label}: failed (exit ${run.status ?? run.signal})`);
    }
  }
  console.log(passed ? '\ndocs:check: every recipe keeps its promise' : '');
  if (!passed) console.error('docs:check: some recipes failed; see above');
  return passed;
}
