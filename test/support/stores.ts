import { afterAll, beforeAll, expect } from '@jest/globals';
import { type RateLimitStore } from '../../lib/index.js';
import { type ResolvedPolicy } from '../../lib/rate-limit.policy.js';
import { startRedis, type TestRedis } from './redis-server.js';

export type StoreKind = 'memory' | 'redis';
export const STORE_KINDS: StoreKind[] = ['memory', 'redis'];

/**
 * Registers a redis-server for the surrounding describe block and returns a getter for it.
 * The server starts only when `kind` is `'redis'`.
 */
export function useRedis(kind: StoreKind): () => TestRedis {
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    if (kind === 'redis') redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  return () => {
    if (!redis) throw new Error('this block has no redis-server');
    return redis;
  };
}

/** A settable clock in milliseconds, for exact timelines. */
export class TestClock {
  constructor(public ms = 1_700_000_000_000) {}
  readonly now = () => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** One policy's decision from a store, without the per-policy breakdown, for short assertions. */
export async function consumeOne(
  store: RateLimitStore,
  key: string,
  policy: ResolvedPolicy,
  cost = 1,
) {
  const { policies, ...decision } = await store.consume([key], [policy], [cost]);
  expect(policies).toHaveLength(1);
  return decision;
}
