/**
 * The memory store's byte budget: it keeps its estimate of the heap its keys take within
 * `maxBytes` by dropping the least recently written keys, counts a key by what its algorithm
 * keeps (a sliding log of many arrivals costs far more than a counter), and gives back every
 * byte when keys go, however they go.
 */
import { describe, expect, it } from '@jest/globals';
import { getHeapStatistics } from 'node:v8';
import { type Algorithm, MemoryStore, RateLimitConfigError } from '../../lib/index.js';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { resolveOptions } from '../../lib/options/resolve-options.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { TestClock } from '../support/stores.js';

const MB = 1024 * 1024;

function policyOf(algorithm: Algorithm, threshold = 1000) {
  return resolvePolicy({ algorithm, period: '1h', threshold }, 'budget');
}

/**
 * Writes `keys` distinct keys, each with `requests` requests a microsecond apart (requests of one
 * microsecond share a log entry), and says how many the store kept.
 */
function fill(
  store: MemoryStore,
  clock: TestClock,
  algorithm: Algorithm,
  keys: number,
  requests: number,
): number {
  const policies = [policyOf(algorithm)];
  const costs = [1];
  // The memory store decides synchronously; only the answers are promises, unneeded here.
  for (let i = 0; i < keys; i++) {
    for (let r = 0; r < requests; r++) {
      clock.advance(0.001);
      void store.consume([`${algorithm}:${i}`], policies, costs);
    }
  }
  return store.size;
}

describe('memory store byte budget', () => {
  it('holds no more than maxBytes by its estimate, dropping the least recently written keys', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.now, maxBytes: 4 * MB });
    const policy = policyOf('sliding-window', 1);
    let peak = 0;
    for (let i = 0; i < 100_000; i++) {
      void store.consume([`k${i}`], [policy], [1]);
      peak = Math.max(peak, store.estimatedBytes);
    }
    expect(peak).toBeLessThanOrEqual(4 * MB);
    // Full, not emptied: the newest keys that fit are all there.
    expect(store.estimatedBytes).toBeGreaterThan(4 * MB - 1000);
    expect(store.size).toBeGreaterThan(5000);
    expect(store.size).toBeLessThan(100_000);
    expect((await store.consume(['k99999'], [policy], [1])).allowed).toBe(false);
    expect((await store.consume(['k0'], [policy], [1])).allowed).toBe(true);
  });

  it('counts a key by what its algorithm keeps: a log of 100 arrivals costs several of one', () => {
    const kept = new Map<string, number>();
    // Each case writes more keys than fit, so what is kept is what the budget holds.
    for (const [algorithm, requests, keys] of [
      ['fixed-window', 20, 20_000],
      ['leaky-bucket', 20, 20_000],
      ['sliding-window', 1, 20_000],
      ['sliding-window', 100, 3000],
    ] as const) {
      const clock = new TestClock();
      const store = new MemoryStore({ clock: clock.now, maxBytes: 2 * MB });
      kept.set(`${algorithm} ${requests}`, fill(store, clock, algorithm, keys, requests));
      expect(store.estimatedBytes).toBeLessThanOrEqual(2 * MB);
    }
    // Counters keep the same small state however many requests they counted.
    expect(kept.get('fixed-window 20')).toBeGreaterThan(5000);
    expect(kept.get('leaky-bucket 20')).toBeGreaterThanOrEqual(kept.get('fixed-window 20')!);
    // A log of 100 arrivals costs over three times a log of one.
    expect(kept.get('sliding-window 100')! * 3).toBeLessThan(kept.get('sliding-window 1')!);
  });

  it('gives back every byte when keys are reset, expire, or release their last lease', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.now });
    const all = [...RATE_ALGORITHMS, 'concurrency' as const].map((a) => policyOf(a, 5));
    for (const policy of all) {
      for (let i = 0; i < 50; i++) {
        const key = [`${policy.algorithm}:${i}`];
        const first = await store.consume(key, [policy], [1]);
        for (let r = 0; r < 6; r++) await store.consume(key, [policy], [1]);
        await store.release(key, [policy], [1], first);
        if (i % 3 === 0) await store.refund(key, [policy], [1]);
        if (i % 5 === 0) await store.block(key, [policy], 10_000);
      }
    }
    expect(store.size).toBe(300);
    expect(store.estimatedBytes).toBeGreaterThan(300 * 200);
    // Reset half the keys; the rest expire and are swept a few per later decision.
    for (const policy of all) {
      for (let i = 0; i < 25; i++) await store.reset([`${policy.algorithm}:${i}`], [policy], [1]);
    }
    expect(store.size).toBe(150);
    clock.advance(2 * 3600_000);
    const other = policyOf('fixed-window');
    for (let i = 0; i < 1000 && store.size > 0; i++) await store.reset(['none'], [other], [1]);
    expect(store.size).toBe(0);
    expect(store.estimatedBytes).toBe(0);
  });

  it('bounds keys by maxKeys as well, when both are given', () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.now, maxBytes: 64 * MB, maxKeys: 1000 });
    expect(fill(store, clock, 'fixed-window', 5000, 1)).toBe(1000);
  });

  it('defaults to a quarter of the heap limit, and refuses a budget past it', () => {
    const limit = getHeapStatistics().heap_size_limit;
    expect(resolveOptions({}).maxMemoryBytes).toBe(Math.floor(limit / 4));
    expect(resolveOptions({}).maxMemoryKeys).toBeUndefined();
    expect(() => resolveOptions({ maxMemoryBytes: limit + 1 })).toThrow(
      new RegExp(`maxMemoryBytes must be a whole number of bytes from 1 to ${limit}`),
    );
    expect(() => new MemoryStore({ maxBytes: 0 })).toThrow(RateLimitConfigError);
    expect(() => new MemoryStore({ maxKeys: 1.5 })).toThrow(/maxKeys must be a positive integer/);
  });
});
