/**
 * A policy's own `onStoreError` in `RateLimitService`: `consume`, `acquire` and `run`, with Redis
 * really stopped under two module instances that share it, through both client libraries. And a
 * memory-only module, which never fails, where the field changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RateLimitException,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
  type RedisConnection,
} from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { STORE_UNAVAILABLE_MESSAGE } from '../../lib/rate-limit.exception.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { inTier } from '../support/matrix.js';

// A paid partner's API: 10 calls a second, across every instance; never unmetered.
const METERED: RateLimitPolicy = { period: '1s', threshold: 10 };
const PARTNER: RateLimitPolicy = { ...METERED, onStoreError: 'deny' };
const EXPORTS: RateLimitPolicy = {
  algorithm: 'concurrency',
  threshold: 3,
  period: '30s',
  onStoreError: 'deny',
};

/** How the module reaches Redis: a URL (the module builds an ioredis client) or a node-redis client. */
const CONNECTIONS: Array<[label: string, connect: (redis: TestRedis) => Promise<RedisConnection>]> =
  inTier([
    ['ioredis from a URL', async (redis) => redis.url],
    ['node-redis client', (redis) => redis.connect('node-redis') as Promise<RedisConnection>],
  ]);

/** What `fn` rejects with; fails the test when it resolves. */
async function rejectionOf(fn: () => Promise<unknown>): Promise<RateLimitException> {
  const outcome = await fn().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(RateLimitException);
  return outcome as RateLimitException;
}

async function boot(options: RateLimitRootOptions, apps: INestApplication[]) {
  const ref = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot({ timeout: 100, ...options })],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  apps.push(app);
  return app.get(RateLimitService);
}

describe.each(CONNECTIONS)('a policy onStoreError in RateLimitService, %s', (_label, connect) => {
  let redis: TestRedis;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await redis
      .client()
      .ping()
      .catch(() => redis.restart());
  });
  afterAll(async () => {
    await redis.stop();
  });

  /** Two module instances on the same Redis; the module's `onStoreError` is its default. */
  async function instances(options: RateLimitRootOptions = {}) {
    const keyPrefix = `pfs-${randomUUID().slice(0, 8)}`;
    const services: RateLimitService[] = [];
    for (let i = 0; i < 2; i++) {
      services.push(await boot({ redis: await connect(redis), keyPrefix, ...options }, apps));
    }
    return services;
  }

  it("consume: 'deny' denies, 'allow' allows past the threshold, no override counts in memory", async () => {
    const [a] = await instances();
    await redis.kill();
    const denied = await a.consume('login:ann', {
      period: '1h',
      threshold: 3,
      onStoreError: 'deny',
    });
    expect(denied).toMatchObject({ allowed: false, degraded: 'deny' });
    expect(denied.retryAfterMs).toBeGreaterThanOrEqual(1000);

    const allowed = [];
    for (let i = 0; i < 5; i++) {
      allowed.push(
        await a.consume('feed:ann', { period: '1h', threshold: 3, onStoreError: 'allow' }),
      );
    }
    expect(allowed.map((d) => [d.allowed, d.degraded])).toEqual(Array(5).fill([true, 'allow']));

    const counted = [];
    for (let i = 0; i < 4; i++)
      counted.push(await a.consume('list:ann', { period: '1h', threshold: 3 }));
    expect(counted.map((d) => [d.allowed, d.degraded])).toEqual([
      [true, 'memory'],
      [true, 'memory'],
      [true, 'memory'],
      [false, 'memory'],
    ]);
    // One 'deny' among the call's policies denies the call.
    const both = await a.consume('both:ann', [
      { name: 'strict', period: '1h', threshold: 3, onStoreError: 'deny' },
      { name: 'plain', period: '1h', threshold: 5 },
    ]);
    expect(both).toMatchObject({ allowed: false, degraded: 'deny' });
  });

  it("run with a 'deny' partner policy lets 0 calls through on two instances, where memory lets 20", async () => {
    const [a, b] = await instances();
    await redis.kill();
    let calls = 0;
    const call = () => Promise.resolve(++calls);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).run('partner', PARTNER, call)),
    );
    expect(calls).toBe(0);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason as RateLimitException;
      expect(error).toBeInstanceOf(RateLimitException);
      expect(error.message).toBe(STORE_UNAVAILABLE_MESSAGE);
      expect(error.decision.degraded).toBe('deny');
      // A handler that lets it through answers as a denied route does.
      expect(error.getStatus()).toBe(503);
    }

    await Promise.allSettled(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 === 0 ? a : b).run('partner', METERED, call, { maxWait: 0 }),
      ),
    );
    expect(calls).toBe(20);
  });

  it("acquire with a 'deny' concurrency policy rejects at once, without waiting out maxWait", async () => {
    const [a, b] = await instances();
    await redis.kill();
    for (const service of [a, b]) {
      const started = performance.now();
      const error = await rejectionOf(() => service.acquire('export', EXPORTS, { maxWait: '5s' }));
      expect(performance.now() - started).toBeLessThan(1000);
      expect(error.message).toBe(STORE_UNAVAILABLE_MESSAGE);
      expect(error.decision.degraded).toBe('deny');
    }
  });

  it("acquire and run with 'allow' pass, beyond the threshold", async () => {
    const [a] = await instances({ onStoreError: 'deny' });
    await redis.kill();
    const open = { ...EXPORTS, onStoreError: 'allow' } as const;
    const permits = [];
    for (let i = 0; i < 5; i++) permits.push(await a.acquire('export', open));
    expect(permits.map((p) => p.degraded)).toEqual(Array(5).fill('allow'));
    await Promise.all(permits.map((p) => p.release()));
    expect(await a.run('partner', { ...PARTNER, onStoreError: 'allow' }, () => 'sent')).toBe(
      'sent',
    );
    // The module's 'deny' still answers the policies without their own.
    const error = await rejectionOf(() => a.run('partner', METERED, () => 1));
    expect(error.decision.degraded).toBe('deny');
  });
});

describe('a policy onStoreError on a memory-only module', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('changes nothing: the memory store never fails, so it decides every call', async () => {
    const service = await boot({}, apps);
    const decisions = [];
    for (let i = 0; i < 4; i++) {
      decisions.push(
        await service.consume('login', { period: '1h', threshold: 3, onStoreError: 'deny' }),
      );
    }
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.every((d) => !('degraded' in d))).toBe(true);
    const permit = await service.acquire('export', EXPORTS);
    expect(permit.allowed).toBe(true);
    await permit.release();
  });
});
