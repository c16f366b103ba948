/**
 * Lock-outs (`blockDuration`, `block()`), for every algorithm on the memory store and on Redis
 * through both client libraries, on an exact simulated timeline.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS, useClockedStores } from '../../support/stores.js';

describe.each(STORE_TARGETS)('lock-outs on %s', (target) => {
  const stores = useClockedStores(target);

  async function setup() {
    const { clock, store } = await stores();
    const key = () => `lock:{${randomUUID()}}`;
    return { clock, store, key };
  }
  const policy = (algorithm: Algorithm, extra: { blockDuration?: string; name?: string } = {}) =>
    resolvePolicy({ algorithm, period: '10s', threshold: 2, ...extra }, 'lock-outs');

  describe.each(RATE_ALGORITHMS.map((a) => [a]))('%s', (algorithm) => {
    it('locks the caller out for blockDuration from the rejection, without extending it', async () => {
      const { clock, store, key } = await setup();
      const p = policy(algorithm, { blockDuration: '30s' });
      const k = key();
      const consume = () => store.consume([k], [p], [1]);
      expect((await consume()).allowed).toBe(true);
      expect((await consume()).allowed).toBe(true);
      const rejectedAt = clock.ms;
      expect(await consume()).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: 30_000,
        resetAfterMs: 30_000,
      });
      // Long after the algorithm alone would have let it through, the lock-out holds, and the
      // requests made during it neither extend it nor count.
      for (const t of [10_000, 20_000, 29_999]) {
        clock.ms = rejectedAt + t;
        expect(await consume()).toMatchObject({ allowed: false, retryAfterMs: 30_000 - t });
      }
      clock.ms = rejectedAt + 30_000;
      // The lock-out replaced the count: a full quota again.
      expect(await consume()).toMatchObject({ allowed: true, remaining: 1 });
      expect((await consume()).allowed).toBe(true);
    });

    it('block() locks out a policy that has no blockDuration; reset lifts it', async () => {
      const { clock, store, key } = await setup();
      const p = policy(algorithm);
      const k = key();
      expect((await store.consume([k], [p], [1])).allowed).toBe(true);
      expect(await store.block!([k], [p], 5000)).toMatchObject({
        allowed: false,
        retryAfterMs: 5000,
      });
      clock.advance(1000);
      expect(await store.consume([k], [p], [1])).toMatchObject({
        allowed: false,
        retryAfterMs: 4000,
      });
      expect(await store.peek!([k], [p], [1])).toMatchObject({
        allowed: false,
        retryAfterMs: 4000,
      });
      expect(await store.refund!([k], [p], [1])).toMatchObject({ allowed: false });
      expect(await store.reset!([k], [p], [1])).toMatchObject({ allowed: true, remaining: 2 });
      expect(await store.consume([k], [p], [1])).toMatchObject({ allowed: true, remaining: 1 });
    });

    it('peek tells of the lock-out a rejection would start, and starts none', async () => {
      const { clock, store, key } = await setup();
      const p = policy(algorithm, { blockDuration: '1m' });
      const k = key();
      await store.consume([k], [p], [1]);
      await store.consume([k], [p], [1]);
      expect(await store.peek!([k], [p], [1])).toMatchObject({
        allowed: false,
        retryAfterMs: 60_000,
      });
      // Two periods on, every algorithm has forgotten the two requests (the sliding counter still
      // weighs the previous window one period on).
      clock.advance(20_000);
      expect((await store.consume([k], [p], [1])).allowed).toBe(true);
    });
  });

  it('one policy locked out rejects the whole request, and the others count nothing', async () => {
    const { clock, store, key } = await setup();
    const strict = policy('sliding-window', { blockDuration: '1m', name: 'strict' });
    const roomy = resolvePolicy({ period: '1h', threshold: 100, name: 'roomy' }, 'lock-outs');
    const [a, b] = [key(), key()];
    const both = () => store.consume([a, b], [strict, roomy], [1, 1]);
    expect((await both()).allowed).toBe(true);
    expect((await both()).allowed).toBe(true);
    const locked = await both();
    expect(locked.allowed).toBe(false);
    expect(locked.retryAfterMs).toBe(60_000);
    expect(locked.policies.map((d) => [d.allowed, d.remaining])).toEqual([
      [false, 0],
      [true, 98],
    ]);
    clock.advance(30_000);
    expect((await both()).retryAfterMs).toBe(30_000);
    // Two allowed requests, however many were turned away.
    expect((await store.peek!([b], [roomy], [1])).remaining).toBe(97);
  });

  it('a cost that can never fit is rejected as never, and locks nothing out', async () => {
    const { store, key } = await setup();
    const p = policy('sliding-window', { blockDuration: '1m' });
    const k = key();
    expect((await store.consume([k], [p], [3])).retryAfterMs).toBe(Infinity);
    expect(await store.consume([k], [p], [1])).toMatchObject({ allowed: true, remaining: 1 });
  });
});
