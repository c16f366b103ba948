/**
 * The block cache answers rejected keys locally. It must never change a decision: random
 * timelines run through a Redis store with and without the cache, under the same simulated
 * clock, and every decision must match.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { type Redis } from 'ioredis';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { type RateLimitDecision, type RateLimitStore, RedisStore } from '../../lib/index.js';
import { resolvePolicy, type ResolvedPolicy } from '../../lib/policy/rate-limit.policy.js';
import { BlockCacheStore } from '../../lib/stores/block-cache.js';
import { adaptStore } from '../../lib/stores/method-store.js';
import { OperationStore } from '../../lib/stores/operation-store.js';
import { type StoreCall } from '../../lib/store-contract/store-call.js';
import { useRedis } from '../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
const timelineArb = fc.record({
  policies: fc.array(
    fc.record({
      algorithm: fc.constantFrom(...RATE_ALGORITHMS),
      period: fc.constantFrom('250ms', '1s', '3s', '10s'),
      threshold: fc.integer({ min: 1, max: 5 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
  steps: fc.array(
    fc.record({
      // Whole milliseconds, mostly inside a window: floods are what the cache is for.
      gapMs: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 0, max: 30 }) },
        { weight: 2, arbitrary: fc.integer({ min: 0, max: 600 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 12_000 }) },
      ),
      client: fc.integer({ min: 0, max: 1 }),
      cost: fc.oneof(
        { weight: 8, arbitrary: fc.constant(1) },
        { weight: 1, arbitrary: fc.integer({ min: 2, max: 6 }) },
      ),
      // A per-request threshold that sometimes grows: a block for the smaller one must not hold.
      raised: fc.oneof(
        { weight: 5, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
    }),
    { minLength: 1, maxLength: 60 },
  ),
});

/** Counts the calls that reach the store behind the cache. */
class Counting implements RateLimitStore {
  calls = 0;
  constructor(private readonly inner: RateLimitStore) {}
  consume(keys: readonly string[], policies: readonly ResolvedPolicy[], costs: readonly number[]) {
    this.calls++;
    return this.inner.consume(keys, policies, costs);
  }
}

/**
 * What must match. A local answer shortens the stored wait by the time passed; the bucket
 * algorithms count tokens in floating point, so the store's own figure may land a millisecond
 * either side. Waits are compared to within 1 ms (the cache ends every block 1 ms early for this).
 */
const view = (d: RateLimitDecision, reference?: RateLimitDecision) => {
  const near = (ms: number, want: number | undefined) =>
    want !== undefined && Math.abs(ms - want) <= 1 ? want : ms;
  return {
    allowed: d.allowed,
    limit: d.limit,
    retryAfterMs: near(d.retryAfterMs, reference?.retryAfterMs),
    policies: d.policies.map((p, i) => ({
      allowed: p.allowed,
      retryAfterMs: near(p.retryAfterMs, reference?.policies[i].retryAfterMs),
    })),
  };
};

describe('block cache: the same decisions as the store alone', () => {
  const redis = useRedis('redis');
  let client: Redis | undefined;
  let [steps, answeredLocally] = [0, 0];

  it(`agrees on every decision of ${RUNS} random timelines, several policies, growing thresholds`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb, async (timeline) => {
        const variants = [0, 1].map((extra) =>
          timeline.policies.map((p, i) =>
            resolvePolicy({ ...p, threshold: p.threshold + extra, name: `p${i}` }, 'cache'),
          ),
        );
        let us = timeline.startUs;
        const clock = () => us / 1000;
        client ??= redis().shared;
        const alone = new RedisStore({ client, clock });
        const behind = new Counting(new RedisStore({ client, clock }));
        const cached = new BlockCacheStore(adaptStore(behind), { clock });
        const [a, b] = [randomUUID(), randomUUID()];

        for (const [index, step] of timeline.steps.entries()) {
          us += step.gapMs * 1000;
          const policies = variants[step.raised ? 1 : 0];
          const keysOf = (run: string) => policies.map((p) => `bc:{${run}|${step.client}}:${p.id}`);
          const costs = policies.map(() => step.cost);
          const expected = await alone.consume(keysOf(a), policies, costs);
          const actual = await cached.consume(keysOf(b), policies, costs);
          expect({ step: index, ...view(actual, expected) }).toEqual({
            step: index,
            ...view(expected),
          });
        }
        steps += timeline.steps.length;
        answeredLocally += timeline.steps.length - behind.calls;
      }),
      { numRuns: RUNS },
    );
    // The comparison means something only if the cache answered a good share on its own.
    process.stdout.write(`block cache: ${answeredLocally} of ${steps} answered locally\n`);
    expect(answeredLocally).toBeGreaterThan(steps / 25);
  });

  it('asks the store once per retry window for a flooding key, and again once the wait is over', async () => {
    let ms = 1_700_000_000_000;
    const clock = () => ms;
    const behind = new Counting(new RedisStore({ client: redis().shared, clock }));
    const cached = new BlockCacheStore(adaptStore(behind), { clock });
    const policy = resolvePolicy({ period: '1s', threshold: 5 }, 'flood');
    const key = [`flood:{${randomUUID()}}`];
    const decisions: RateLimitDecision[] = [];
    for (let i = 0; i < 100; i++) decisions.push(await cached.consume(key, [policy], [1]));

    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    expect(behind.calls).toBe(6);
    expect(cached.size).toBe(1);
    // Redis gives the wait in µs, so the block lasts to its very end, and no longer.
    ms += 999.5;
    expect(await cached.consume(key, [policy], [1])).toMatchObject({
      allowed: false,
      retryAfterMs: 1,
    });
    expect(behind.calls).toBe(6);
    ms += 0.5;
    expect((await cached.consume(key, [policy], [1])).allowed).toBe(true);
    expect(behind.calls).toBe(7);
  });

  it('keeps grouping a flooding key after a request takes the last slot that freed up', async () => {
    let ms = 1_700_000_000_000;
    const clock = () => ms;
    const behind = new Counting(new RedisStore({ client: redis().shared, clock }));
    const cached = new BlockCacheStore(adaptStore(behind), { clock });
    const policy = resolvePolicy({ period: '1s', threshold: 5 }, 'last-slot');
    const key = [`last-slot:{${randomUUID()}}`];
    for (let i = 0; i < 5; i++) {
      await cached.consume(key, [policy], [1]);
      ms += 100;
    }
    expect((await cached.consume(key, [policy], [1])).allowed).toBe(false);
    expect(behind.calls).toBe(6);

    // The oldest request leaves the window: one request takes its slot, with nobody else waiting.
    ms += 500;
    expect(await cached.consume(key, [policy], [1])).toMatchObject({ allowed: true, remaining: 0 });
    expect(behind.calls).toBe(7);
    // The burst that follows asks the store once, and the rest are answered from its rejection.
    const burst = await Promise.all(
      Array.from({ length: 50 }, () => cached.consume(key, [policy], [1])),
    );
    expect(burst.filter((d) => d.allowed)).toHaveLength(0);
    expect(behind.calls).toBe(8);
  });

  it('groups a burst of a rejected key once its block ends: the same answers, two store calls', async () => {
    let ms = 1_700_000_000_000;
    const clock = () => ms;
    const alone = new RedisStore({ client: redis().shared, clock });
    const behind = new Counting(new RedisStore({ client: redis().shared, clock }));
    const cached = new BlockCacheStore(adaptStore(behind), { clock });
    // One request per 100 ms, none saved up: after each wait exactly one more fits.
    const policy = resolvePolicy(
      { algorithm: 'leaky-bucket', period: '1s', threshold: 10, burst: 1 },
      'burst',
    );
    const [a, b] = [[`burst:{${randomUUID()}}`], [`burst:{${randomUUID()}}`]];
    for (const store of [alone, cached]) {
      const key = store === alone ? a : b;
      expect((await store.consume(key, [policy], [1])).allowed).toBe(true);
      expect((await store.consume(key, [policy], [1])).allowed).toBe(false);
    }
    expect(behind.calls).toBe(2);

    ms += 100;
    const burst = (store: RateLimitStore, key: string[]) =>
      Promise.all(Array.from({ length: 200 }, () => store.consume(key, [policy], [1])));
    const [expected, actual] = await Promise.all([burst(alone, a), burst(cached, b)]);

    const summary = (ds: RateLimitDecision[]) => ({
      allowed: ds.filter((d) => d.allowed).length,
      waits: [...new Set(ds.filter((d) => !d.allowed).map((d) => d.retryAfterMs))],
    });
    expect(summary(actual)).toEqual(summary(expected));
    expect(summary(actual)).toEqual({ allowed: 1, waits: [100] });
    // One call let the request through with nothing remaining, one more was rejected, and its
    // block answered the other 198.
    expect(behind.calls).toBe(4);
  });

  it('answers requests that waited on a failed call as the store-error policy says, asking no more', async () => {
    let ms = 1_700_000_000_000;
    const policy = resolvePolicy({ period: '1s', threshold: 1 }, 'failing');
    const rejected: RateLimitDecision = {
      allowed: false,
      limit: 1,
      remaining: 0,
      resetAfterMs: 1000,
      retryAfterMs: 1000,
      policies: [
        { policy, allowed: false, limit: 1, remaining: 0, resetAfterMs: 1000, retryAfterMs: 1000 },
      ],
    };
    // The store answers a rejection, then fails (as ResilientStore reports a timeout: degraded).
    // Like the resilient store the module puts below the cache, it answers a call marked as
    // having waited on a failed one by the store-error policy, without asking again.
    let release: (d: RateLimitDecision) => void = () => {};
    let calls = 0;
    let failureAnswers = 0;
    class Scripted extends OperationStore {
      execute(call: StoreCall): Promise<RateLimitDecision> {
        if (call.failedMeanwhile === true) {
          failureAnswers++;
          return Promise.resolve({ ...rejected, degraded: 'deny' });
        }
        return calls++ === 0
          ? Promise.resolve(rejected)
          : new Promise<RateLimitDecision>((resolve) => (release = resolve));
      }
    }
    const cached = new BlockCacheStore(new Scripted(), { clock: () => ms });
    const key = [`failing:{${randomUUID()}}`];
    expect((await cached.consume(key, [policy], [1])).allowed).toBe(false);

    ms += 1000;
    const burst = Promise.all(Array.from({ length: 50 }, () => cached.consume(key, [policy], [1])));
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(2);
    release({ ...rejected, degraded: 'memory' });
    const answers = await burst;

    expect(answers[0].degraded).toBe('memory');
    expect(answers.slice(1).every((d) => d.degraded === 'deny')).toBe(true);
    expect(failureAnswers).toBe(49);
    expect(calls).toBe(2);
    expect(cached.size).toBe(0);
  });

  it('forgets the oldest block past its size bound', async () => {
    const ms = 1_700_000_000_000;
    const behind = new Counting(new RedisStore({ client: redis().shared, clock: () => ms }));
    const cached = new BlockCacheStore(adaptStore(behind), { clock: () => ms, maxSize: 3 });
    const policy = resolvePolicy({ period: '1m', threshold: 1 }, 'bound');
    const keys = Array.from({ length: 5 }, () => [`bound:{${randomUUID()}}`]);
    for (const key of keys) {
      await cached.consume(key, [policy], [1]);
      await cached.consume(key, [policy], [1]);
    }
    expect(cached.size).toBe(3);
    const before = behind.calls;
    await cached.consume(keys[4], [policy], [1]);
    expect(behind.calls).toBe(before);
    expect((await cached.consume(keys[0], [policy], [1])).allowed).toBe(false);
    expect(behind.calls).toBe(before + 1);
  });
});
