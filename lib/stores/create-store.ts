import { Redis } from 'ioredis';
import { type RateLimitModuleOptions } from '../rate-limit.options.js';
import { configError } from '../rate-limit.policy.js';
import { MemoryStore } from './memory/memory.store.js';
import { RedisStore } from './redis/redis.store.js';
import { type RateLimitStore } from './store.interface.js';

/** The active store, and whether the module made it (and so closes it on shutdown). */
export interface StoreHandle {
  readonly store: RateLimitStore;
  readonly owned: boolean;
  readonly kind: 'redis' | 'memory' | 'custom';
}

/** Picks the store the options describe: a custom one, Redis, or memory. */
export function createStore(options: RateLimitModuleOptions): StoreHandle {
  const { store, redis, clock } = options;
  if (store !== undefined) {
    if (store === null || typeof store.consume !== 'function') {
      throw configError(
        'RateLimitModule options',
        'store',
        store,
        'an object with a consume() method',
      );
    }
    return { store, owned: false, kind: 'custom' };
  }
  if (redis === undefined)
    return { store: new MemoryStore({ clock }), owned: true, kind: 'memory' };
  if (isClient(redis)) {
    return { store: new RedisStore({ client: redis, clock }), owned: false, kind: 'redis' };
  }
  if (typeof redis !== 'string' && (redis === null || typeof redis !== 'object')) {
    throw configError(
      'RateLimitModule options',
      'redis',
      redis,
      'an ioredis client, ioredis options or a URL',
    );
  }
  const client = typeof redis === 'string' ? new Redis(redis) : new Redis(redis);
  return { store: new RedisStore({ client, clock, ownsClient: true }), owned: true, kind: 'redis' };
}

// Duck-typed so a client from another copy of ioredis (or a Cluster) is still recognised.
function isClient(value: unknown): value is RedisStore['client'] {
  const v = value as { defineCommand?: unknown; evalsha?: unknown } | null;
  return typeof v?.defineCommand === 'function' && typeof v.evalsha === 'function';
}
