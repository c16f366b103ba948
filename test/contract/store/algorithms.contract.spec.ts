/**
 * What each algorithm promises, and where an approximate one departs from the exact log,
 * shown on fixed timelines under a simulated clock, on both stores.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { MemoryStore, type RateLimitStore, RedisStore } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { consumeOne, STORE_KINDS, TestClock, useRedis } from '../../support/stores.js';

// A window boundary of every period used below: a whole number of minutes since the epoch.
const BOUNDARY_MS = 1_700_000_040_000;

describe.each(STORE_KINDS)('algorithms on the %s store', (kind) => {
  const redis = useRedis(kind);
  const setup = (algorithm: Algorithm, period: string, threshold: number, burst?: number) => {
    const clock = new TestClock(BOUNDARY_MS);
    const store: RateLimitStore =
      kind === 'memory'
        ? new MemoryStore({ clock: clock.now })
        : new RedisStore({ client: redis().shared, clock: clock.now });
    const policy = resolvePolicy({ algorithm, period, threshold, burst }, 'test');
    const key = `alg:{${randomUUID()}}:${policy.id}`;
    const at = (ms: number, cost = 1) => {
      clock.ms = BOUNDARY_MS + ms;
      return consumeOne(store, key, policy, cost);
    };
    const allowedAt = async (times: number[]) => {
      const out: boolean[] = [];
      for (const t of times) out.push((await at(t)).allowed);
      return out;
    };
    return { at, allowedAt };
  };

  it('fixed window: exact per clock-aligned window, but up to 2x the threshold across a boundary', async () => {
    const fixed = setup('fixed-window', '1s', 5);
    const log = setup('sliding-window', '1s', 5);
    // Five just before a boundary and five just after: ten within 2 ms.
    const times = [995, 996, 997, 998, 999, 1000, 1001, 1002, 1003, 1004];
    expect(await fixed.allowedAt(times)).toEqual(Array(10).fill(true));
    expect(await log.allowedAt(times)).toEqual([...Array(5).fill(true), ...Array(5).fill(false)]);
    // Within one window it never passes more than the threshold, and it says when the next opens.
    expect(await fixed.at(1500)).toMatchObject({
      allowed: false,
      retryAfterMs: 500,
      resetAfterMs: 500,
    });
    expect(await fixed.at(2000)).toMatchObject({ allowed: true, remaining: 4, resetAfterMs: 1000 });
  });

  it('sliding-window counter: weights the previous window by overlap, admitting more than the log when it bunched', async () => {
    const counter = setup('sliding-window-counter', '1s', 10);
    const log = setup('sliding-window', '1s', 10);
    const lateBurst = Array.from({ length: 10 }, (_, i) => 990 + i);
    expect(await counter.allowedAt(lateBurst)).toEqual(Array(10).fill(true));
    expect(await log.allowedAt(lateBurst)).toEqual(Array(10).fill(true));
    // Half-way through the next window the ten count as 10 * 0.5 = 5: five more pass, although
    // all ten are still within the last second. The exact log admits none.
    const half = [1500, 1501, 1502, 1503, 1504, 1505];
    expect(await counter.allowedAt(half)).toEqual([true, true, true, true, true, false]);
    expect(await log.allowedAt(half)).toEqual(Array(6).fill(false));
    // Its bound: the current window alone never exceeds the threshold.
    const counterRest = Array.from({ length: 8 }, (_, i) => 1900 + i);
    expect((await counter.allowedAt(counterRest)).filter(Boolean).length).toBeLessThanOrEqual(
      10 - 5,
    );
  });

  it('sliding-window counter: early requests of the previous window still weigh, so it can be stricter too', async () => {
    const counter = setup('sliding-window-counter', '1s', 4);
    expect(await counter.allowedAt([0, 1, 2, 3])).toEqual([true, true, true, true]);
    // At 1.1s those four are older than a second, but still weigh 4 * 0.9 = 3.6.
    expect(await counter.at(1100)).toMatchObject({ allowed: false, retryAfterMs: 150 });
    expect(await counter.at(1250)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('token bucket: a burst up to capacity, then a continuous refill that keeps fractions', async () => {
    const bucket = setup('token-bucket', '1s', 2, 4);
    expect(await bucket.allowedAt([0, 0, 0, 0, 0])).toEqual([true, true, true, true, false]);
    // Two tokens a second: after 250 ms half a token is back; it is kept, not floored away.
    expect(await bucket.at(250)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 250 });
    expect(await bucket.at(500)).toMatchObject({ allowed: true, remaining: 0, resetAfterMs: 2000 });
    expect(await bucket.at(1000, 2)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(await bucket.at(1500, 2)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('leaky bucket (GCRA): drains one request per period/threshold, holding up to burst', async () => {
    const gcra = setup('leaky-bucket', '1s', 4, 2);
    expect(await gcra.allowedAt([0, 0, 0])).toEqual([true, true, false]);
    // One request drains every 250 ms.
    expect(await gcra.at(100)).toMatchObject({
      allowed: false,
      retryAfterMs: 150,
      resetAfterMs: 400,
    });
    expect(await gcra.at(250)).toMatchObject({ allowed: true, remaining: 0, resetAfterMs: 500 });
    expect(await gcra.allowedAt([500, 750, 1000, 1250])).toEqual([true, true, true, true]);
  });

  it.each<Algorithm>(['sliding-window', 'fixed-window', 'leaky-bucket', 'token-bucket'])(
    '%s: Retry-After is honest, the request passes exactly when told and not a millisecond before',
    async (algorithm) => {
      const limiter = setup(algorithm, '1s', 3);
      for (const t of [10, 11, 12]) expect((await limiter.at(t)).allowed).toBe(true);
      const rejected = await limiter.at(13);
      expect(rejected.allowed).toBe(false);
      expect(rejected.retryAfterMs).toBeGreaterThan(1);
      expect((await limiter.at(13 + rejected.retryAfterMs - 1)).allowed).toBe(false);
      expect((await limiter.at(13 + rejected.retryAfterMs)).allowed).toBe(true);
    },
  );

  it.each<Algorithm>([...RATE_ALGORITHMS])(
    '%s: a cost above what the policy can ever allow is rejected at once, as never, and consumes nothing',
    async (algorithm) => {
      const limiter = setup(algorithm, '1s', 3);
      expect(await limiter.at(0, 4)).toMatchObject({
        allowed: false,
        retryAfterMs: Infinity,
        remaining: 3,
      });
      expect(await limiter.at(0, 3)).toMatchObject({ allowed: true, remaining: 0 });
    },
  );
});
