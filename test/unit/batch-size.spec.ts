/** `batchSize` is checked when the store is built, naming the option and the value. */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RateLimitConfigError, RedisStore } from '../../lib/index.js';

describe('RedisStore batchSize', () => {
  const client = new Redis({ lazyConnect: true });

  it.each([
    [0, '0'],
    [-1, '-1'],
    [2.5, '2.5'],
    [Number.NaN, 'NaN'],
    ['8', '"8"'],
  ])('refuses %p', (batchSize, shown) => {
    expect(() => new RedisStore({ client, batchSize: batchSize as number })).toThrow(
      new RateLimitConfigError(
        `RedisStore: batchSize must be an integer of 1 or more, got ${shown}`,
      ),
    );
  });

  it('takes 1, which sends each decision alone, and any larger integer', () => {
    expect(() => new RedisStore({ client, batchSize: 1 })).not.toThrow();
    expect(() => new RedisStore({ client, batchSize: 64 })).not.toThrow();
  });
});
