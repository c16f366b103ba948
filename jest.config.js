/**
 * Jest runs the TypeScript sources as native ES modules (Nest 12 ships ESM only). `TEST_TIER`
 * (test/tiers.js) picks how much: `fast` runs the specs that need no Redis, on the memory store;
 * `default` (`npm test`) runs every spec on the memory store and ioredis against redis-server;
 * `all` (unset) runs two projects: `redis`, every spec through every client library on
 * redis-server, and `valkey`, the store, fault, cluster and flow contracts, the settlement
 * timelines and the health indicator again on valkey-server. `npx jest --selectProjects valkey`
 * runs one of them.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tierOf } from './test/tiers.js';

const root = dirname(fileURLToPath(import.meta.url));

/** `$VALKEY_SERVER`, else `../shared/bin/valkey-server` beside the project; why not, if neither. */
function findValkey() {
  const fromEnv = process.env.VALKEY_SERVER;
  if (fromEnv) {
    return existsSync(fromEnv)
      ? { binary: fromEnv }
      : { missing: `VALKEY_SERVER=${fromEnv} does not exist` };
  }
  const beside = resolve(root, '../shared/bin/valkey-server');
  return existsSync(beside)
    ? { binary: beside }
    : { missing: `no ${beside} and VALKEY_SERVER is unset (point it at a valkey-server binary)` };
}

const tier = tierOf(process.env.TEST_TIER);
const valkey = tier.valkey ? findValkey() : { missing: undefined };
if (valkey.missing && process.env.CI === 'true') {
  throw new Error(`The Valkey suites cannot run: ${valkey.missing}`);
}
const notRun = valkey.missing && `The Valkey suites did not run: ${valkey.missing}.`;
// `--selectProjects valkey` alone finds no project and no reporter runs: say why here instead.
if (notRun && process.argv.includes('valkey') && !process.argv.includes('redis')) {
  process.stderr.write(`${notRun}\n`);
}

const shared = {
  rootDir: root,
  preset: 'ts-jest/presets/default-esm',
  // Each test file gets its own environment, so the server a project names (in `globals`) never
  // leaks into another project's file run by the same worker.
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    '^nest-rate-limit$': '<rootDir>/lib/index.ts',
    '^nest-rate-limit/testing$': '<rootDir>/lib/testing/index.ts',
    '^nest-rate-limit/console$': '<rootDir>/lib/console/index.ts',
  },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  // Closes the GLIDE clients a spec file opened, each holding a native connection. GLIDE's core
  // logger is turned off where GLIDE is loaded (test/support/glide-logger.ts).
  setupFilesAfterEnv: ['<rootDir>/test/support/glide-cleanup.ts'],
};

const redisProject = {
  ...shared,
  displayName: { name: tier.project, color: 'red' },
  testMatch: ['<rootDir>/test/**/*.spec.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...tier.leaveOut],
  globals: { __TEST_SERVER__: { name: 'redis', command: 'redis-server' } },
};

const valkeyProject = {
  ...shared,
  displayName: { name: 'valkey', color: 'cyan' },
  testMatch: [
    '<rootDir>/test/contract/store/**/*.spec.ts',
    '<rootDir>/test/property/settlements.spec.ts',
    '<rootDir>/test/fault/**/*.spec.ts',
    '<rootDir>/test/cluster/cluster.spec.ts',
    '<rootDir>/test/cluster/override-source.cluster.spec.ts',
    '<rootDir>/test/flow/leases-and-bookings.contract.spec.ts',
    '<rootDir>/test/health/**/*.spec.ts',
  ],
  globals: { __TEST_SERVER__: { name: 'valkey', command: valkey.binary } },
};

export default {
  projects: valkey.binary ? [redisProject, valkeyProject] : [redisProject],
  testTimeout: 30_000,
  ...(tier.maxWorkers === undefined ? {} : { maxWorkers: tier.maxWorkers }),
  // A handle left open by one test (a client reconnecting, a timer) must fail loudly in that test,
  // not hang the run until CI gives up: exit once every test has finished.
  forceExit: true,
  reporters: ['default', ['<rootDir>/test/support/summary-reporter.js', { notRun }]],
};
