/**
 * What an override does to usage already counted, for every algorithm, through the module's
 * `RateLimitService` on the memory store and on Redis through each client library. The clock is
 * held still, so that every answer is exact.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type TestingModule, Test } from '@nestjs/testing';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RateLimitModule, RateLimitService, type RateLimitPermit } from '../../../lib/index.js';
import { STORE_TARGETS, TestClock, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';

const WINDOWS: Algorithm[] = ['fixed-window', 'sliding-window', 'sliding-window-counter'];

describe.each(STORE_TARGETS)('overrides on usage already counted, on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const modules: TestingModule[] = [];
  afterEach(async () => {
    await Promise.all(modules.splice(0).map((m) => m.close()));
  });

  async function setup(algorithm: Algorithm) {
    const clock = new TestClock();
    const store =
      target === 'memory'
        ? {}
        : { redis: await redis().connect(target), timeout: REDIS_DECIDES_MS };
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          ...store,
          clock: clock.now,
          keyPrefix: `ov-${randomUUID().slice(0, 8)}`,
          globalGuard: false,
        }),
      ],
    }).compile();
    await moduleRef.init();
    modules.push(moduleRef);
    const service = moduleRef.get(RateLimitService);
    const policy = { name: 'quota', algorithm, period: '10s', threshold: 5 } as const;
    const key = `k-${randomUUID()}`;
    const consume = () => service.consume(key, policy);
    /** Whether each of `n` calls in a row is allowed. */
    const run = async (n: number) => {
      const out: boolean[] = [];
      for (let i = 0; i < n; i++) out.push((await consume()).allowed);
      return out;
    };
    return { clock, service, policy, key, consume, run };
  }

  describe.each(WINDOWS.map((a) => [a]))('%s', (algorithm) => {
    it('a lowered threshold rejects until the usage falls under it', async () => {
      const s = await setup(algorithm);
      expect(await s.run(4)).toEqual([true, true, true, true]);
      await s.service.override('quota', { threshold: 2 });
      const rejected = await s.consume();
      expect(rejected).toMatchObject({ allowed: false, remaining: 0 });
      expect(rejected.policies[0].policy.threshold).toBe(2);
      expect(rejected.retryAfterMs).toBeGreaterThan(0);
      // The counter weighs the previous window in too: its usage fades out over one more period.
      const longest = algorithm === 'sliding-window-counter' ? 20_000 : 10_000;
      expect(rejected.retryAfterMs).toBeLessThanOrEqual(longest);
      s.clock.advance(rejected.retryAfterMs - 1);
      expect((await s.consume()).allowed).toBe(false);
      s.clock.advance(1);
      expect((await s.consume()).allowed).toBe(true);
    });

    it('a raised threshold lets the same key through at once, up to the new limit', async () => {
      const s = await setup(algorithm);
      expect(await s.run(6)).toEqual([true, true, true, true, true, false]);
      await s.service.override('quota', { threshold: 8 });
      expect(await s.run(4)).toEqual([true, true, true, false]);
      // Cleared: the policy's own 5 again, with 8 used.
      await s.service.clearOverride('quota');
      expect((await s.consume()).allowed).toBe(false);
    });
  });

  describe('concurrency', () => {
    const LEASES = { name: 'slots', algorithm: 'concurrency', period: '1m', threshold: 3 } as const;

    async function leases() {
      const s = await setup('concurrency');
      const key = `k-${randomUUID()}`;
      const held: RateLimitPermit[] = [];
      const acquire = async () => {
        try {
          held.push(await s.service.acquire(key, LEASES, { maxWait: 0 }));
          return true;
        } catch {
          return false;
        }
      };
      return { ...s, held, acquire };
    }

    it('a lowered threshold turns new calls away until enough leases are released', async () => {
      const s = await leases();
      for (let i = 0; i < 3; i++) expect(await s.acquire()).toBe(true);
      await s.service.override('slots', { threshold: 2 });
      expect(await s.acquire()).toBe(false);
      await s.held.shift()!.release();
      expect(await s.acquire()).toBe(false);
      await s.held.shift()!.release();
      expect(await s.acquire()).toBe(true);
      expect(await s.acquire()).toBe(false);
      await Promise.all(s.held.map((p) => p.release()));
    });

    it('a raised threshold lets more calls run at once', async () => {
      const s = await leases();
      for (let i = 0; i < 3; i++) expect(await s.acquire()).toBe(true);
      expect(await s.acquire()).toBe(false);
      await s.service.override('slots', { threshold: 5 });
      expect([await s.acquire(), await s.acquire(), await s.acquire()]).toEqual([
        true,
        true,
        false,
      ]);
      await Promise.all(s.held.map((p) => p.release()));
    });
  });

  // 5 per 10 s: one request every 2 s, 5 at once. A token bucket keeps its tokens (up to the new
  // burst); the leaky bucket keeps the time its requests booked, read at the new rate.
  const BUCKETS: Array<['token-bucket' | 'leaky-bucket']> = [['token-bucket'], ['leaky-bucket']];
  describe.each(BUCKETS)('%s', (algorithm) => {
    it('a lowered threshold caps what is left at the new burst', async () => {
      const s = await setup(algorithm);
      expect((await s.consume()).remaining).toBe(4);
      await s.service.override('quota', { threshold: 2 });
      // Token bucket: 4 tokens, capped at 2. Leaky bucket: 2 s booked of 2 x 5 s.
      const left = { 'token-bucket': 2, 'leaky-bucket': 1 }[algorithm];
      const allowed = await s.run(left + 1);
      expect(allowed).toEqual([...Array<boolean>(left).fill(true), false]);
      const rejected = await s.consume();
      expect(rejected.policies[0].policy).toMatchObject({ threshold: 2, burst: 2 });
      s.clock.advance(rejected.retryAfterMs);
      expect((await s.consume()).allowed).toBe(true);
    });

    it('a raised threshold keeps a full bucket full, and refills it at the new rate', async () => {
      const s = await setup(algorithm);
      expect(await s.run(5)).toEqual([true, true, true, true, true]);
      expect((await s.consume()).retryAfterMs).toBe(2000);
      await s.service.override('quota', { threshold: 10 });
      const full = await s.consume();
      expect(full).toMatchObject({ allowed: false, retryAfterMs: 1000 });
      s.clock.advance(1000);
      expect(await s.run(2)).toEqual([true, false]);
    });

    it('a raised burst adds room at once on the leaky bucket only', async () => {
      const s = await setup(algorithm);
      expect(await s.run(5)).toEqual([true, true, true, true, true]);
      await s.service.override('quota', { threshold: 5, burst: 10 });
      const room = { 'token-bucket': 0, 'leaky-bucket': 5 }[algorithm];
      expect(await s.run(room + 1)).toEqual([...Array<boolean>(room).fill(true), false]);
      const rejected = await s.consume();
      expect(rejected.policies[0].policy).toMatchObject({ threshold: 5, burst: 10 });
      expect(rejected.retryAfterMs).toBe(2000);
    });
  });
});
