import { type RedisStore } from '../stores/redis/redis.store.js';
import { type Clock } from '../stores/store.interface.js';
import { MemoryOverrideSource } from './memory-override-source.js';
import { type OverrideSource } from './override-source.js';

/** What a Redis store's overrides are kept with. */
export interface RedisOverrideSourceOptions {
  readonly store: RedisStore;
  readonly keyPrefix: string;
  readonly clock: Clock | undefined;
}

/**
 * Where a Redis store's overrides live. The one place that picks the source for Redis: until
 * a source shared through Redis is built here, each instance keeps its own, as on the memory
 * store.
 */
export function redisOverrideSource(options: RedisOverrideSourceOptions): OverrideSource {
  return new MemoryOverrideSource(options.clock);
}
