import { afterAll, beforeAll, expect } from '@jest/globals';
import { MemoryStore, type RateLimitStore, RedisStore } from '../../lib/index.js';
import { type ResolvedPolicy } from '../../lib/policy/rate-limit.policy.js';
import { CLIENT_KINDS, type ClientKind } from './clients.js';
import { TEST_TIER } from './matrix.js';
import { startCluster, type StartClusterOptions, type TestCluster } from './redis-cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

export type StoreKind = 'memory' | 'redis';
/** The stores suites run on: the memory store alone in the fast tier (see matrix.ts). */
/**
 * The store timeout of apps whose specs count what Redis decides: on a busy machine a decision
 * past the 100 ms default is the fallback's, which counts on one instance alone (and gives the
 * late reply back), so a spec that counts exactly gives Redis this long.
 */
export const REDIS_DECIDES_MS = 5000;

export const STORE_KINDS: StoreKind[] = TEST_TIER === 'fast' ? ['memory'] : ['memory', 'redis'];

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

/** Registers a Redis Cluster (three masters by default) for the surrounding describe block. */
export function useCluster(options: StartClusterOptions = { replicas: 0 }): () => TestCluster {
  let cluster: TestCluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster(options);
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (!cluster) throw new Error('this block has no cluster');
    return cluster;
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

/** The store under the module's wrappers (the block cache, then the resilience layer). */
export function primaryOf(store: RateLimitStore): RateLimitStore {
  let current = store as RateLimitStore & { inner?: RateLimitStore; primary?: RateLimitStore };
  while (current.inner !== undefined || current.primary !== undefined) {
    current = (current.inner ?? current.primary)!;
  }
  return current;
}

/** Where a store contract runs: the memory store, or Redis through one client library. */
export type StoreTarget = 'memory' | ClientKind;
export const STORE_TARGETS: StoreTarget[] =
  TEST_TIER === 'fast' ? ['memory'] : ['memory', ...CLIENT_KINDS];

/**
 * Registers what `target` needs for the surrounding describe block (a redis-server for Redis)
 * and returns a factory of stores, each under a fresh test clock.
 */
export function useClockedStores(
  target: StoreTarget,
): () => Promise<{ clock: TestClock; store: RateLimitStore }> {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  return async () => {
    const clock = new TestClock();
    if (target === 'memory') return { clock, store: new MemoryStore({ clock: clock.now }) };
    const store = new RedisStore({ client: await redis().connect(target), clock: clock.now });
    await store.warmUp();
    return { clock, store };
  };
}
