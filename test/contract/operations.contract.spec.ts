/**
 * peek, refund and reset, for every algorithm on the memory store and on Redis through both
 * client libraries. The clock is held still within a scenario, so that "what consume would
 * answer" and "as if those requests never happened" can be compared with exact equality.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ALGORITHMS, type Algorithm } from '../../lib/algorithms/algorithm.js';
import { MemoryStore, type RateLimitStore, RedisStore } from '../../lib/index.js';
import { resolvePolicy } from '../../lib/rate-limit.policy.js';
import { CLIENT_KINDS, type ClientKind } from '../support/clients.js';
import { TestClock, useRedis } from '../support/stores.js';

type Target = 'memory' | ClientKind;
const TARGETS: Target[] = ['memory', ...CLIENT_KINDS];

describe.each(TARGETS)('peek, refund and reset on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');

  async function setup(algorithm: Algorithm) {
    const clock = new TestClock();
    const store: RateLimitStore =
      target === 'memory'
        ? new MemoryStore({ clock: clock.now })
        : new RedisStore({ client: await redis().connect(target), clock: clock.now });
    const policy = resolvePolicy({ algorithm, period: '10s', threshold: 5 }, 'operations');
    const op =
      (name: 'consume' | 'peek' | 'refund' | 'reset') =>
      (key: string, cost = 1) =>
        store[name]!([key], [policy], [cost]);
    return {
      clock,
      key: () => `ops:{${randomUUID()}}`,
      consume: op('consume'),
      peek: op('peek'),
      refund: op('refund'),
      reset: op('reset'),
    };
  }

  describe.each(ALGORITHMS.map((a) => [a]))('%s', (algorithm) => {
    it('peek answers what consume would, and records nothing', async () => {
      const s = await setup(algorithm);
      const key = s.key();
      await s.consume(key);
      await s.consume(key);
      const first = await s.peek(key);
      expect(first).toMatchObject({ allowed: true, remaining: 2 });
      expect(await s.peek(key)).toEqual(first);
      expect(await s.peek(key, 3)).toEqual(await s.peek(key, 3));
      expect(await s.consume(key)).toEqual(first);

      await s.consume(key, 2);
      const rejected = await s.peek(key);
      expect(rejected.allowed).toBe(false);
      expect(rejected.retryAfterMs).toBeGreaterThan(0);
      expect(await s.consume(key)).toEqual(rejected);
      // A cost no policy can ever allow is answered as never, as consume does.
      expect((await s.peek(key, 6)).retryAfterMs).toBe(Infinity);
    });

    it('refund gives back exactly its cost, as if those requests had never been made', async () => {
      const s = await setup(algorithm);
      const [refunded, untouched] = [s.key(), s.key()];
      for (let i = 0; i < 4; i++) await s.consume(refunded);
      await s.consume(untouched);
      await s.consume(untouched);
      expect(await s.refund(refunded, 2)).toMatchObject({ allowed: true, remaining: 3 });
      expect(await s.peek(refunded)).toEqual(await s.peek(untouched));
      expect(await s.consume(refunded)).toEqual(await s.consume(untouched));
    });

    it('refund never fills the quota past full', async () => {
      const s = await setup(algorithm);
      const [refunded, fresh] = [s.key(), s.key()];
      await s.consume(refunded);
      const full = { allowed: true, remaining: 5, retryAfterMs: 0 };
      expect(await s.refund(refunded, 5)).toMatchObject(full);
      expect(await s.peek(refunded)).toEqual(await s.peek(fresh));
      expect(await s.refund(s.key(), 3)).toMatchObject({ ...full, resetAfterMs: 0 });
      for (let i = 0; i < 5; i++) expect((await s.consume(refunded)).allowed).toBe(true);
      expect((await s.consume(refunded)).allowed).toBe(false);
    });

    it('refund lets a rejected key through again', async () => {
      const s = await setup(algorithm);
      const key = s.key();
      for (let i = 0; i < 5; i++) await s.consume(key);
      expect((await s.consume(key)).allowed).toBe(false);
      await s.refund(key);
      expect(await s.consume(key)).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('reset restores the full quota', async () => {
      const s = await setup(algorithm);
      const [key, fresh] = [s.key(), s.key()];
      for (let i = 0; i < 5; i++) await s.consume(key);
      s.clock.advance(1);
      expect((await s.consume(key)).allowed).toBe(false);
      expect(await s.reset(key)).toMatchObject({ allowed: true, remaining: 5, resetAfterMs: 0 });
      expect(await s.peek(key)).toEqual(await s.peek(fresh));
      expect(await s.consume(key)).toEqual(await s.consume(fresh));
    });
  });
});
