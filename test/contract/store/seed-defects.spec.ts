/**
 * Defects of the source articles (../shared/seeds/README.md) that the stores avoid, proved on the
 * memory store and on Redis alike: the sliding log first, then the bucket and window algorithms.
 * Each title says what holds, then the defect it rules out and its article ("seed 003" is 003_…).
 */
import { describe, expect, it } from '@jest/globals';
import { MemoryStore, RedisStore, type RateLimitStore } from '../../../lib/index.js';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { newKey, policy } from './seed-policy.js';
import { consumeOne, STORE_KINDS, TestClock, useRedis } from '../../support/stores.js';
import { entriesOf, unitsIn } from '../../support/weighted-sets.js';

describe.each(STORE_KINDS)('source-article defects of the sliding log on the %s store', (kind) => {
  const redis = useRedis(kind);
  const makeStore = (clock?: TestClock): RateLimitStore =>
    kind === 'memory'
      ? new MemoryStore({ clock: clock?.now })
      : new RedisStore({ client: redis().shared, clock: clock?.now });

  it('same-instant requests each count (a timestamp as the set member collides; seeds 001, 003, 004)', async () => {
    const clock = new TestClock();
    const store = makeStore(clock);
    const key = newKey();
    const p = policy(60, 5);
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push((await consumeOne(store, key, p, 1)).allowed);
    // With member = timestamp, requests 2..7 would overwrite request 1 and all pass.
    expect(answers).toEqual([true, true, true, true, true, false, false]);
    if (kind === 'redis') {
      // The instant's requests share one entry that carries all five of them.
      const client = redis().client();
      expect((await entriesOf(client, key)).map((e) => e.units)).toEqual([5]);
      expect(await unitsIn(client, key)).toBe(5);
    }
  });

  it('a client retrying while blocked is not locked out (rejected requests counted; seed 003)', async () => {
    const clock = new TestClock();
    const store = makeStore(clock);
    const key = newKey();
    const p = policy('1s', 3);
    for (let i = 0; i < 3; i++) await consumeOne(store, key, p, 1);
    // Retry every 10ms through 30 more windows; in the seed each retry is recorded and the block
    // never ends. Here each window lets 3 through: at +1000, +1010, +1020 of it.
    let allowedAfterWindow = 0;
    for (let t = 10; t <= 30_020; t += 10) {
      clock.advance(10);
      if ((await consumeOne(store, key, p, 1)).allowed) allowedAfterWindow++;
    }
    expect(allowedAfterWindow).toBe(90);
  });

  it('a rejection leaves no trace (the request added before it is counted; seed 003)', async () => {
    const clock = new TestClock();
    const store = makeStore(clock);
    const key = newKey();
    const p = policy(60, 2);
    await consumeOne(store, key, p, 1);
    await consumeOne(store, key, p, 1);
    const rejected = await consumeOne(store, key, p, 1);
    expect(rejected.allowed).toBe(false);
    // Had it been added, the oldest entry's exit would no longer be enough to let one in.
    clock.advance(60_000);
    expect(await consumeOne(store, key, p, 1)).toMatchObject({ allowed: true, remaining: 1 });
    if (kind === 'redis') expect(await unitsIn(redis().client(), key)).toBe(1);
  });

  it('the log never holds more than threshold entries (O(N) memory; seed 003)', async () => {
    const clock = new TestClock();
    const store = makeStore(clock);
    const key = newKey();
    const p = policy('1s', 20);
    for (let i = 0; i < 500; i++) {
      clock.advance(13);
      await consumeOne(store, key, p, 1 + (i % 3));
    }
    if (kind === 'redis') {
      expect(await unitsIn(redis().client(), key)).toBeLessThanOrEqual(20);
      expect((await entriesOf(redis().client(), key)).length).toBeLessThanOrEqual(20);
    }
    const last = await consumeOne(store, key, p, 1);
    expect(last.limit - last.remaining).toBeLessThanOrEqual(20);
  });

  it('concurrent requests within the limit all pass (a lock that rejects instead of waiting; seed 001)', async () => {
    const store = makeStore();
    const key = newKey();
    const p = policy(60, 25);
    const decisions = await Promise.all(
      Array.from({ length: 25 }, () => consumeOne(store, key, p, 1)),
    );
    expect(decisions.every((d) => d.allowed)).toBe(true);
  });
});

describe.each(STORE_KINDS)(
  'source-article defects of the bucket and window algorithms on the %s store',
  (kind) => {
    const redis = useRedis(kind);
    const makeStore = (clock?: TestClock): RateLimitStore =>
      kind === 'memory'
        ? new MemoryStore({ clock: clock?.now })
        : new RedisStore({ client: redis().shared, clock: clock?.now });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it('callers faster than the rate still get refills (a floored refill whose time is reset on every call; seed 000)', async () => {
      const clock = new TestClock();
      const store = makeStore(clock);
      const key = newKey();
      const p = policy('1s', 2, 'token-bucket', 1);
      expect((await consumeOne(store, key, p)).allowed).toBe(true);
      // Call every 200 ms for 10 s: in the seed, floor(0.2 s x 2/s) = 0 and the refill time moves
      // on every call, so the bucket never refills. Here fractions accumulate across calls.
      let allowed = 0;
      for (let t = 200; t <= 10_000; t += 200) {
        clock.advance(200);
        if ((await consumeOne(store, key, p)).allowed) allowed++;
      }
      // A token every 500 ms, taken on the 200 ms call grid: one every 600 ms.
      expect(allowed).toBe(16);
    });

    it('the token bucket refills at the configured rate (TIME in seconds read as milliseconds; seed 002)', async () => {
      const store = makeStore();
      const key = newKey();
      const p = policy('1s', 10, 'token-bucket');
      const drainedFrom = performance.now();
      const drained = await Promise.all(
        Array.from({ length: 11 }, () => consumeOne(store, key, p)),
      );
      const drainedBy = performance.now();
      expect(drained.filter((d) => d.allowed)).toHaveLength(10);
      // Ten a second is one per 100 ms, read from the real clock (Redis TIME on the Redis store):
      // 150 ms on, at least one has come back, and no more than the time since the drain began
      // can account for, however long a busy machine makes these calls (seconds read as
      // milliseconds would have refilled the whole bucket).
      await sleep(150);
      let refilled = 0;
      while (refilled <= 10 && (await consumeOne(store, key, p)).allowed) refilled++;
      const since = performance.now() - drainedFrom;
      // A timer may fire a fraction of a millisecond early by performance.now(): what the first
      // token needs is 100 ms, which 150 leaves room for.
      expect(performance.now() - drainedBy).toBeGreaterThanOrEqual(100);
      expect(refilled).toBeGreaterThanOrEqual(1);
      expect(refilled).toBeLessThanOrEqual(Math.floor(since / 100));
    });

    it('the fixed window counts every request (a SET NX that never increments; seed 002)', async () => {
      const clock = new TestClock(1_700_000_040_000);
      const store = makeStore(clock);
      const key = newKey();
      const p = policy('1m', 3, 'fixed-window');
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await consumeOne(store, key, p)).allowed);
      expect(answers).toEqual([true, true, true, false, false]);
    });

    it('the leaky bucket drains threshold per period, not one (a SET NX that never moves the drain time; seed 002)', async () => {
      const clock = new TestClock();
      const store = makeStore(clock);
      const key = newKey();
      const p = policy('1s', 10, 'leaky-bucket', 1);
      let allowed = 0;
      for (let i = 0; i < 20; i++) {
        if ((await consumeOne(store, key, p)).allowed) allowed++;
        clock.advance(100);
      }
      expect(allowed).toBe(20);
    });

    it.each<Algorithm>(['token-bucket', 'leaky-bucket', 'fixed-window', 'sliding-window-counter'])(
      'concurrent %s decisions never exceed the limit (separate GET and SET race; seed 001)',
      async (algorithm) => {
        // Three clients on Redis; in memory, one process's store is the whole story.
        const shared = makeStore();
        const stores =
          kind === 'redis' ? [shared, makeStore(), makeStore()] : [shared, shared, shared];
        const key = newKey();
        const p = policy('1h', 10, algorithm);
        const decisions = await Promise.all(
          Array.from({ length: 90 }, (_, i) => consumeOne(stores[i % 3], key, p)),
        );
        expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      },
    );
  },
);
