/**
 * peek, refund and reset, for every algorithm on the memory store and on Redis through both
 * client libraries. The clock is held still within a scenario, so that "what consume would
 * answer" and "as if those requests never happened" can be compared with exact equality.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { type RateLimitDecision } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS, useClockedStores } from '../../support/stores.js';

describe.each(STORE_TARGETS)('peek, refund and reset on %s', (target) => {
  const stores = useClockedStores(target);

  async function setup(algorithm: Algorithm) {
    const { clock, store } = await stores();
    const policy = resolvePolicy({ algorithm, period: '10s', threshold: 5 }, 'operations');
    const op =
      (name: 'consume' | 'peek' | 'refund' | 'reset') =>
      (key: string, cost = 1, of?: RateLimitDecision) =>
        name === 'refund'
          ? store.refund!([key], [policy], [cost], of)
          : store[name]!([key], [policy], [cost]);
    return {
      clock,
      key: () => `ops:{${randomUUID()}}`,
      consume: op('consume'),
      peek: op('peek'),
      refund: op('refund'),
      reset: op('reset'),
    };
  }

  describe.each(RATE_ALGORITHMS.map((a) => [a]))('%s', (algorithm) => {
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

    it('refund of a decision gives back that request, not the latest', async () => {
      const s = await setup(algorithm);
      const [refunded, without] = [s.key(), s.key()];
      const first = await s.consume(refunded);
      for (const key of [refunded, without]) await s.consume(key);
      s.clock.advance(100);
      for (const key of [refunded, without]) await s.consume(key);
      s.clock.advance(100);
      await s.refund(refunded, 1, first);
      const exact = ['sliding-window', 'fixed-window', 'sliding-window-counter'];
      if (exact.includes(algorithm)) {
        // As if the first request had never been made, now and once the others age out.
        expect(await s.peek(refunded)).toEqual(await s.peek(without));
        s.clock.advance(9_850);
        expect(await s.peek(refunded)).toEqual(await s.peek(without));
      } else {
        // A bucket refilled meanwhile; what it got back is one request's worth.
        expect((await s.peek(refunded)).remaining).toBe((await s.peek(without)).remaining);
      }
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

  it('refund of a request counted in a window that has passed changes the current one not at all', async () => {
    for (const algorithm of ['fixed-window', 'sliding-window-counter'] as const) {
      const s = await setup(algorithm);
      const key = s.key();
      s.clock.advance(9_000);
      const old = await s.consume(key);
      // Two windows on, the old window counts for nothing, even for the sliding counter.
      s.clock.advance(11_000);
      await s.consume(key);
      const before = await s.peek(key);
      await s.refund(key, 1, old);
      expect(await s.peek(key)).toEqual(before);
    }
  });

  it('refund of a sliding counter request from the previous window takes it off that window', async () => {
    const s = await setup('sliding-window-counter');
    const [refunded, without] = [s.key(), s.key()];
    s.clock.advance(9_000);
    const old = await s.consume(refunded);
    await s.consume(refunded);
    await s.consume(without);
    s.clock.advance(2_000);
    await s.refund(refunded, 1, old);
    expect(await s.peek(refunded)).toEqual(await s.peek(without));
  });
});
