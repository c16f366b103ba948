// Runs Jest on one tier of test/tiers.js (`node scripts/test.mjs fast|default|all [jest args]`),
// with the Node options every tier needs: ES modules in Jest's VM, and a heap large enough for the
// full matrix in one worker. NODE_OPTIONS carries them, so the workers and the processes that
// specs start get them too.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const [tier, ...jestArgs] = process.argv.slice(2);
// Jest's exports map hides its bin; it sits beside the build the main entry points into.
const jest = join(dirname(createRequire(import.meta.url).resolve('jest')), '../bin/jest.js');
const nodeOptions = [
  process.env.NODE_OPTIONS,
  '--experimental-vm-modules',
  '--disable-warning=ExperimentalWarning',
  '--max-old-space-size=12288',
]
  .filter(Boolean)
  .join(' ');
const { status, signal } = spawnSync(process.execPath, [jest, ...jestArgs], {
  stdio: 'inherit',
  env: { ...process.env, TEST_TIER: tier, NODE_OPTIONS: nodeOptions },
});
process.exit(status ?? (signal ? 1 : 0));
