/**
 * settle, for every rate algorithm, on the memory store and on Redis through every client library:
 * reservations raced against each other and then settled at once, whose usage must come out
 * exactly as the actuals add up, and a reservation that used more than the whole budget, whose
 * debt must reject the next request for exactly as long as the algorithm's own formula says.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MAX_DEBT_US, type RateAlgorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { type RateLimitDecision, RedisStore } from '../../../lib/index.js';
import { resolvePolicy, type ResolvedPolicy } from '../../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS, useClockedStores, useRedis } from '../../support/stores.js';

const BUDGET = 1000;
const ESTIMATE = 20;
const RESERVATIONS = BUDGET / ESTIMATE;
const BUCKETS = new Set<RateAlgorithm>(['token-bucket', 'leaky-bucket']);

/** A budget of `threshold` over `period`; a bucket holds all of it at once. */
const budget = (algorithm: RateAlgorithm, period: string, threshold: number) =>
  resolvePolicy(
    { algorithm, period, threshold, ...(BUCKETS.has(algorithm) ? { burst: threshold } : {}) },
    'settlements',
  );

/** One actual per reservation, each in 1..40, from a fixed seed, whose sum `fits` says. */
const actualsWhere = (seed: number, fits: (sum: number) => boolean): number[] =>
  fc.sample(
    fc
      .array(fc.integer({ min: 1, max: 2 * ESTIMATE }), {
        minLength: RESERVATIONS,
        maxLength: RESERVATIONS,
      })
      .filter((actuals) => fits(sum(actuals))),
    { seed, numRuns: 1 },
  )[0];

const sum = (values: readonly number[]) => values.reduce((total, v) => total + v, 0);

describe.each(STORE_TARGETS)('settlements on %s', (target) => {
  const stores = useClockedStores(target);

  async function setup(policy: ResolvedPolicy) {
    const { clock, store } = await stores();
    const key = `settle:{${randomUUID()}}`;
    const on = (cost: number) => [[key], [policy], [cost]] as const;
    return {
      clock,
      store,
      consume: (cost: number) => store.consume(...on(cost)),
      peek: (cost: number) => store.peek!(...on(cost)),
      settle: (delta: number, of: RateLimitDecision) => store.settle!(...on(delta), of),
      refund: (cost: number, of?: RateLimitDecision) => store.refund!(...on(cost), of),
    };
  }

  /**
   * Fifty reservations of 20 raced against each other (`spacedUs` apart, or all in the same
   * microsecond), then all settled at once at their actuals; answers the settlements.
   */
  async function raceAndSettle(
    s: Awaited<ReturnType<typeof setup>>,
    actuals: readonly number[],
    spacedUs: number,
  ): Promise<RateLimitDecision[]> {
    const reservations = await Promise.all(
      actuals.map(() => {
        s.clock.advance(spacedUs / 1000);
        return s.consume(ESTIMATE);
      }),
    );
    expect(reservations.every((r) => r.allowed)).toBe(true);
    expect(reservations.map((r) => r.remaining).sort((a, b) => a - b)).toEqual(
      Array.from({ length: RESERVATIONS }, (_, i) => i * ESTIMATE),
    );
    return Promise.all(reservations.map((r, i) => s.settle(actuals[i] - ESTIMATE, r)));
  }

  describe.each(RATE_ALGORITHMS.map((a) => [a]))('%s', (algorithm) => {
    const policy = budget(algorithm, '1d', BUDGET);

    it.each([
      ['at distinct microseconds', 10],
      ['all in the same microsecond', 0],
    ])(
      '50 concurrent reservations settled at once record exactly the actuals (%s)',
      async (_arrivals, spacedUs) => {
        const s = await setup(policy);
        const actuals = actualsWhere(spacedUs + 1, (total) => total < BUDGET);
        await raceAndSettle(s, actuals, spacedUs);
        const used = sum(actuals);
        expect(await s.peek(0)).toMatchObject({ allowed: true, remaining: BUDGET - used });
        // What is left is all there is: a request of it fits, one more does not.
        expect((await s.peek(BUDGET - used)).allowed).toBe(true);
        expect((await s.peek(BUDGET - used + 1)).allowed).toBe(false);
      },
    );

    it('settlements past the budget leave the exact debt, whatever order they land in', async () => {
      const s = await setup(policy);
      const actuals = actualsWhere(7, (total) => total > BUDGET + 50);
      const used = sum(actuals);
      // Held still: every reservation and settlement at one moment, for exact formulas below.
      const settled = await raceAndSettle(s, actuals, 0);
      const last = settled.filter((d) => !d.allowed);
      expect(last.length).toBeGreaterThan(0);
      expect(await s.peek(0)).toMatchObject({ allowed: false, remaining: 0 });

      // The wait of one more request, as each algorithm's formula gives it.
      const P = policy.periodUs;
      const debtUs: Record<RateAlgorithm, () => number> = {
        'fixed-window': () => P - ((s.clock.ms * 1000) % P),
        'sliding-window-counter': () => {
          const now = s.clock.ms * 1000;
          const start = now - (now % P);
          return start + P + (P - ((BUDGET - 1) * P) / used) - now;
        },
        // Every unit in the one entry of that moment: it has to leave the window.
        'sliding-window': () => P,
        'token-bucket': () => ((1 - (BUDGET - used)) * P) / BUDGET,
        'leaky-bucket': () => (used + 1 - BUDGET) * Math.ceil(P / BUDGET),
      };
      const rejected = await s.consume(1);
      expect(rejected).toMatchObject({ allowed: false, remaining: 0 });
      expect(rejected.retryAfterMs).toBe(Math.ceil(Math.ceil(debtUs[algorithm]()) / 1000));

      // The debt, read by giving back all of it and 100 more: exactly 100 then remain.
      await s.refund(used - BUDGET + 100);
      expect(await s.peek(0)).toMatchObject({ allowed: true, remaining: 100 });
    });
  });

  /**
   * A budget of 50 per 10 s; a reservation of 10 at 2 s into a window, settled at 3 s for 60
   * used; the next request at 3.5 s. Rejected, for as long as each algorithm's formula says.
   */
  const DEBTS: [RateAlgorithm, number, string][] = [
    ['fixed-window', 6_500, 'until the window ends at 10 s'],
    // Next window: 60 x (10 s - e) / 10 s + 1 <= 50 once e >= 10 s - 49 x 10 s / 60.
    ['sliding-window-counter', 8_334, 'until 11.833 s, in the next window'],
    ['sliding-window', 8_500, 'until its entry, 60 units, leaves at 12 s'],
    // -5 tokens at 3 s, -2.5 at 3.5 s: 3.5 tokens short, at 5 per second.
    ['token-bucket', 700, 'until 3.5 tokens have refilled'],
    // TAT 2 s + 10 x 0.2 s, then + 50 x 0.2 s at 3 s: 14 s; 14 + 0.2 - 3.5 - 50 x 0.2 = 0.7 s.
    ['leaky-bucket', 700, 'until the TAT less the burst has passed'],
  ];

  it.each(DEBTS)(
    '%s: estimate 10, actual 60 on a budget of 50: the next request waits %i ms (%s)',
    async (algorithm, waitMs) => {
      const s = await setup(budget(algorithm, '10s', 50));
      const start = s.clock.ms - (s.clock.ms % 10_000);
      s.clock.ms = start + 2_000;
      const reservation = await s.consume(10);
      expect(reservation).toMatchObject({ allowed: true, remaining: 40 });
      s.clock.ms = start + 3_000;
      expect(await s.settle(50, reservation)).toMatchObject({ allowed: false, remaining: 0 });
      s.clock.ms = start + 3_500;
      expect(await s.consume(1)).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: waitMs,
      });
      // Rejected for exactly that long: still a millisecond before, allowed once it has passed.
      s.clock.advance(waitMs - 1);
      expect((await s.consume(1)).allowed).toBe(false);
      s.clock.advance(1);
      expect((await s.consume(1)).allowed).toBe(true);
    },
  );

  it('bounds a debt past all measure, so that Redis takes it like any other', async () => {
    for (const algorithm of RATE_ALGORITHMS) {
      // One request per ten years, and a billion used: the buckets' debts stop at MAX_DEBT_US.
      const s = await setup(budget(algorithm, '3650d', 1));
      const settled = await s.settle(1e9, await s.consume(1));
      expect(settled).toMatchObject({ allowed: false, remaining: 0 });
      if (BUCKETS.has(algorithm)) expect(settled.retryAfterMs).toBe(MAX_DEBT_US / 1000);
      expect(await s.consume(1)).toMatchObject({ allowed: false, remaining: 0 });
    }
  });

  it('gives back the unused part of a reservation, as a refund of that request would', async () => {
    for (const algorithm of RATE_ALGORITHMS) {
      const policy = budget(algorithm, '10s', 50);
      const [settled, refunded] = [await setup(policy), await setup(policy)];
      // Between two other requests, so that what is given back is the reservation's own.
      const reserve = async (s: typeof settled) => {
        await s.consume(5);
        s.clock.advance(10);
        const reservation = await s.consume(30);
        s.clock.advance(10);
        await s.consume(5);
        s.clock.advance(100);
        return reservation;
      };
      const [a, b] = [await reserve(settled), await reserve(refunded)];
      expect(await settled.settle(-18, a)).toEqual(await refunded.refund(18, b));
      expect(await settled.peek(1)).toEqual(await refunded.peek(1));
      expect(await settled.peek(1)).toMatchObject({ allowed: true });
    }
  });

  it('charges a reservation counted in a window that has passed where it was counted', async () => {
    // The fixed window: nowhere, that window no longer counts. The sliding counter: to the
    // previous window, which still weighs; two windows on, nowhere either.
    const fixed = await setup(budget('fixed-window', '10s', 50));
    const counter = await setup(budget('sliding-window-counter', '10s', 50));
    const older = await setup(budget('sliding-window-counter', '10s', 50));
    const fresh = await setup(budget('sliding-window-counter', '10s', 50));
    const all = [fixed, counter, older, fresh];
    for (const s of all) s.clock.ms -= s.clock.ms % 10_000;
    const [f, c, o] = [await fixed.consume(10), await counter.consume(10), await older.consume(10)];
    await fresh.consume(40);
    for (const s of all) s.clock.advance(12_000);
    expect(await fixed.settle(30, f)).toMatchObject({ allowed: true, remaining: 50 });
    // 10 + 30 in the previous window, weighted by 0.8 at 2 s into this one: 32 used.
    expect(await counter.settle(30, c)).toMatchObject({ allowed: true, remaining: 18 });
    expect(await counter.peek(1)).toEqual(await fresh.peek(1));
    older.clock.advance(10_000);
    expect(await older.settle(30, o)).toMatchObject({ allowed: true, remaining: 50 });
  });
});

describe('a key in debt keeps its TTL until the debt no longer matters, on Redis', () => {
  const redis = useRedis('redis');

  // A budget of 50 per 10 s; 10 reserved, 60 used. Redis's own clock and real TTLs, in ms: the
  // bucket is full again after 60 x 0.2 s, the log's entry leaves after a period, the counter's
  // count weighs until the next window ends, the fixed window's until this one does.
  const LIVES: [RateAlgorithm, number, number][] = [
    ['token-bucket', 11_000, 12_000],
    ['leaky-bucket', 11_000, 12_000],
    ['sliding-window', 9_000, 10_000],
    ['sliding-window-counter', 10_000, 20_000],
    ['fixed-window', 0, 10_000],
  ];

  it.each(LIVES)('%s: between %i and %i ms', async (algorithm, least, most) => {
    const store = new RedisStore({ client: redis().shared });
    const policy = budget(algorithm, '10s', 50);
    const key = `settle:{${randomUUID()}}`;
    const reservation = await store.consume([key], [policy], [10]);
    await store.settle([key], [policy], [50], reservation);
    const ttl = await redis().shared.pttl(key);
    expect(ttl).toBeGreaterThan(least);
    expect(ttl).toBeLessThanOrEqual(most);
  });
});
