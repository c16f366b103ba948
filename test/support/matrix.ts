/**
 * What a test run covers, chosen here once for every suite. `TEST_TIER` (set by the npm scripts;
 * see test/tiers.js) picks it:
 *
 * - `fast` (`npm run test:fast`): the memory store alone; no Redis is started.
 * - `default` (`npm test`): the memory store, and Redis through ioredis on redis-server.
 * - `all` (`npm run test:all`, and any run that names no tier): every client library, on
 *   redis-server and on valkey-server.
 *
 * Suites take their stores and clients from these lists instead of naming them, so a tier
 * narrows every suite at once.
 */
export type TestTier = 'fast' | 'default' | 'all';

function tierOf(value: string | undefined): TestTier {
  if (value === undefined || value === '') return 'all';
  if (value === 'fast' || value === 'default' || value === 'all') return value;
  throw new Error(`TEST_TIER must be fast, default or all, got ${value}`);
}

export const TEST_TIER: TestTier = tierOf(process.env.TEST_TIER);

/**
 * The kinds of `every` a run covers: all of them in the full tier, else the first alone (the
 * fast tier leaves out the files that need Redis, so it never reaches a client).
 */
export function inTier<T>(every: readonly T[]): T[] {
  return TEST_TIER === 'all' ? [...every] : every.slice(0, 1);
}
