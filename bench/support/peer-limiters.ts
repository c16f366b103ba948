/** The libraries people would pick instead, each called the way its documentation shows. */
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import {
  closeClient,
  connectNodeRedis,
  type Limit,
  type Limiter,
  neverDegraded,
  type NodeRedis,
} from './limiter.js';

export interface FlexibleOptions {
  readonly prefix: string;
  /** rate-limiter-flexible's opt-in local block: answer a key locally once it consumed this much. */
  readonly inMemoryBlockOnConsumed?: number;
}

/** rate-limiter-flexible's RateLimiterRedis: a fixed window that starts at a key's first request. */
export async function flexibleLimiter(
  url: string,
  limit: Limit,
  options: FlexibleOptions,
): Promise<Limiter> {
  const client = new Redis(url);
  await client.ping();
  return flexibleOn(client, limit, options, {});
}

/**
 * The same on a node-redis client, with `useRedisPackage: true` as its documentation says for the
 * `redis` package v4 and later. It then sends its script with EVAL, the whole text on every call,
 * instead of the EVALSHA of ioredis's defineCommand. Without the flag (it detects node-redis 4 by
 * constructor name only) it treats a node-redis 6 client as ioredis and fails on the first call.
 */
export async function nodeRedisFlexibleLimiter(
  url: string,
  limit: Limit,
  options: FlexibleOptions,
): Promise<Limiter> {
  const client = await connectNodeRedis(url);
  return flexibleOn(client, limit, options, { useRedisPackage: true });
}

function flexibleOn(
  client: Redis | NodeRedis,
  limit: Limit,
  options: FlexibleOptions,
  extra: { readonly useRedisPackage?: boolean },
): Limiter {
  const limiter = new RateLimiterRedis({
    storeClient: client,
    keyPrefix: options.prefix,
    ...flexiblePoints(limit),
    inMemoryBlockOnConsumed: options.inMemoryBlockOnConsumed,
    ...extra,
  });
  return flexibleRow(limiter, client, options.prefix, () => closeClient(client));
}

/** rate-limiter-flexible's points and duration for `limit`, which it counts in whole seconds. */
export function flexiblePoints(limit: Limit): { points: number; duration: number } {
  if (limit.periodMs % 1000 !== 0) throw new Error('rate-limiter-flexible counts whole seconds');
  return { points: limit.threshold, duration: limit.periodMs / 1000 };
}

/** A rate-limiter-flexible limiter of any store as a contender. */
export function flexibleRow(
  limiter: { consume(key: string): Promise<unknown> },
  client: unknown,
  prefix: string,
  close: () => Promise<void>,
): Limiter {
  return {
    client,
    decide: async (key) => {
      try {
        await limiter.consume(key);
        return true;
      } catch (error) {
        // Over the limit it rejects with a RateLimiterRes; anything else is a real failure.
        if (error instanceof RateLimiterRes) return false;
        throw error;
      }
    },
    redisKeyMarker: (key) => `${prefix}:${key}`,
    degraded: neverDegraded,
    close,
  };
}

/**
 * @nest-lab/throttler-storage-redis, the Redis storage of @nestjs/throttler, called as the
 * throttler guard calls it. Its block duration is the guard's default, the ttl: with 0, Redis
 * refuses the script's `SET … PX 0` as soon as a key goes over its limit.
 */
export async function nestLabLimiter(url: string, limit: Limit, prefix: string): Promise<Limiter> {
  const client = new Redis(url);
  await client.ping();
  const storage = new ThrottlerStorageRedisService(client);
  return {
    client,
    decide: async (key) => {
      const record = await storage.increment(
        `${prefix}:${key}`,
        limit.periodMs,
        limit.threshold,
        limit.periodMs,
        'default',
      );
      return !record.isBlocked;
    },
    // It stores `{<key>:<throttler name>}:hits` and `…:blocked`.
    redisKeyMarker: (key) => `{${prefix}:${key}:default}`,
    degraded: neverDegraded,
    close: () => closeClient(client),
  };
}
