/**
 * RateLimitService.peek, refund and reset through a real Nest app, with the module's wrappers
 * (block cache, deadline, fallback) in the path; and what the block cache of one instance does
 * when another instance gives a key its quota back.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  MemoryStore,
  RateLimitModule,
  type RateLimitStore,
  type RateLimitPolicy,
  RateLimitService,
} from '../../../lib/index.js';
import { type RateLimitRootOptions } from '../../../lib/options/rate-limit.options.js';
import { STORE_KINDS, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { uniquePrefix, uniqueUser } from '../http/fixtures/app.js';

const LOGIN: RateLimitPolicy = { period: '1h', threshold: 3, name: 'login' };

describe.each(STORE_KINDS)('RateLimitService operations on the %s store', (kind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function service(options: RateLimitRootOptions = {}): Promise<RateLimitService> {
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
          keyPrefix: uniquePrefix(),
          ...options,
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  it('peeks without counting, refunds exactly, and resets to a full quota', async () => {
    const limiter = await service();
    const key = `login:${uniqueUser()}`;
    expect(await limiter.peek(key, LOGIN)).toMatchObject({ allowed: true, remaining: 2 });
    expect(await limiter.peek(key, LOGIN)).toMatchObject({ allowed: true, remaining: 2 });
    for (let i = 0; i < 3; i++) await limiter.consume(key, LOGIN);
    const rejected = await limiter.consume(key, LOGIN);
    expect(rejected.allowed).toBe(false);
    expect(await limiter.peek(key, LOGIN)).toMatchObject({ allowed: false });

    expect(await limiter.refund(key, LOGIN)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await limiter.consume(key, LOGIN)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await limiter.consume(key, LOGIN)).allowed).toBe(false);

    expect(await limiter.reset(key, LOGIN)).toMatchObject({ allowed: true, remaining: 3 });
    for (let i = 2; i >= 0; i--) {
      expect(await limiter.consume(key, LOGIN)).toMatchObject({ allowed: true, remaining: i });
    }
    expect(await limiter.refund(key, LOGIN, { cost: 10 })).toMatchObject({ remaining: 3 });
  });

  it('blocks a key for a while on request, and reset lifts it', async () => {
    const limiter = await service();
    const key = `login:${uniqueUser()}`;
    expect((await limiter.consume(key, LOGIN)).allowed).toBe(true);
    const blocked = await limiter.block(key, LOGIN, '1h');
    expect(blocked).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 });
    const during = await limiter.consume(key, LOGIN);
    expect(during.allowed).toBe(false);
    expect(during.retryAfterMs).toBeGreaterThan(3_590_000);
    await limiter.reset(key, LOGIN);
    expect(await limiter.consume(key, LOGIN)).toMatchObject({ allowed: true, remaining: 2 });
    expect(() => limiter.block(key, LOGIN, -1)).toThrow(
      /RateLimitService\.block: duration must be at least 1ms, got -1/,
    );
  });

  it('validates its arguments like consume, naming the method', async () => {
    const limiter = await service();
    expect(() => limiter.refund('', LOGIN)).toThrow(
      /RateLimitService\.refund: key must be a non-empty string/,
    );
    expect(() => limiter.peek('k', LOGIN, { cost: 0 })).toThrow(
      /RateLimitService\.peek: cost must be an integer from 1 to 1000000000, got 0/,
    );
    const routeOnly = { ...LOGIN, count: 'failures' } as RateLimitPolicy;
    expect(() => limiter.consume('k', routeOnly)).toThrow(
      /RateLimitService\.consume: unknown field "count" \(count applies only to @RateLimit routes\)/,
    );
  });
});

describe('a custom store with consume() only', () => {
  it('rejects the operations it lacks, naming them, and keeps deciding through the store', async () => {
    const memory = new MemoryStore();
    const store: RateLimitStore = { consume: (k, p, c) => memory.consume(k, p, c) };
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store })],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const limiter = app.get(RateLimitService);
    for (let i = 0; i < 5; i++) {
      await expect(limiter.refund('k', LOGIN)).rejects.toThrow(/has no refund\(\) method/);
    }
    // A reservation is refused before anything is counted: it could never be settled.
    await expect(limiter.reserve('k', LOGIN, 1)).rejects.toThrow(
      /RateLimitService\.reserve: store must be a store with a settle\(\) method, got "?Object/,
    );
    // Not taken for an outage: decisions still come from the store.
    const decision = await limiter.consume('k', LOGIN);
    expect(decision).toMatchObject({ allowed: true, remaining: 2 });
    expect(decision.degraded).toBeUndefined();
    await app.close();
  });
});

describe('the block cache across instances on one Redis', () => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function instance(keyPrefix: string): Promise<RateLimitService> {
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: redis().url, keyPrefix })],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  it('lets a key through on this instance at once, and on another within a second, after a reset', async () => {
    const keyPrefix = uniquePrefix();
    const [one, two] = [await instance(keyPrefix), await instance(keyPrefix)];
    const key = `login:${uniqueUser()}`;
    for (let i = 0; i < 3; i++) await one.consume(key, LOGIN);
    // Rejected for about an hour: both instances now answer the key from their block cache.
    for (const limiter of [one, two, one, two]) {
      expect((await limiter.consume(key, LOGIN)).allowed).toBe(false);
    }

    await one.reset(key, LOGIN);
    const resetAt = performance.now();
    expect(await one.consume(key, LOGIN)).toMatchObject({ allowed: true, remaining: 2 });

    let allowedOnTwo = await two.consume(key, LOGIN);
    while (!allowedOnTwo.allowed && performance.now() - resetAt < 3000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      allowedOnTwo = await two.consume(key, LOGIN);
    }
    // The other instance asks Redis again within its cache's one-second hold, not after the
    // hour the block would last: on a loaded machine the second may stretch, never to the hour.
    expect(allowedOnTwo).toMatchObject({ allowed: true, remaining: 1 });
  });
});
