/**
 * Defects of the source articles (../shared/seeds/README.md) that only Redis can show: clients
 * racing on one key, whose clock a decision reads, how large a key grows and whether it expires.
 * Each title says what holds, then the defect it rules out and its article ("seed 003" is 003_…).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../../lib/index.js';
import { type Algorithm } from '../../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { newKey, policy } from './seed-policy.js';
import { consumeOne, useRedis } from '../../support/stores.js';
import { entriesOf, unitsIn } from '../../support/weighted-sets.js';
import { isDecisionIdKey, stateKeys } from '../../support/decision-ids.js';

describe('source-article defects on the Redis store', () => {
  const redis = useRedis('redis');

  it('separate clients hammering one key never exceed the limit (read-modify-write races; seed 001)', async () => {
    const clients = await Promise.all([0, 1, 2, 3].map(() => redis().connect('ioredis')));
    const stores = clients.map((client) => new RedisStore({ client }));
    const key = newKey();
    const p = policy(60, 17);
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => consumeOne(stores[i % stores.length], key, p, 1)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(17);
    expect(await unitsIn(redis().client(), key)).toBe(17);
  });

  it("the Redis store reads Redis TIME, never the process clock (the app server's clock; seed 004)", async () => {
    const client = redis().shared;
    const store = new RedisStore({ client });
    const key = newKey();
    const realDateNow = Date.now;
    const realPerfNow = performance.now.bind(performance);
    const serverMicros = async () => {
      const [s, us] = await client.time();
      return Number(s) * 1e6 + Number(us);
    };
    const before = await serverMicros();
    try {
      // An app server whose clock is a day off must not move the window.
      Date.now = () => realDateNow() - 86_400_000;
      performance.now = () => realPerfNow() - 86_400_000;
      expect((await consumeOne(store, key, policy(60, 2), 1)).allowed).toBe(true);
    } finally {
      Date.now = realDateNow;
      performance.now = realPerfNow;
    }
    const after = await serverMicros();
    const [{ score }] = await entriesOf(client, key);
    expect(score).toBeGreaterThanOrEqual(before);
    expect(score).toBeLessThanOrEqual(after);
  });

  it.each<Algorithm>(['leaky-bucket', 'token-bucket', 'fixed-window', 'sliding-window-counter'])(
    '%s keeps one small key however many requests it counts (O(N) memory for large limits; seed 003)',
    async (algorithm) => {
      const client = redis().shared;
      const store = new RedisStore({ client });
      const key = newKey();
      const p = policy('1h', 1000, algorithm);
      const sizeAfter = async (n: number) => {
        for (let i = 0; i < n; i++) await consumeOne(store, key, p);
        const keys = stateKeys(await client.keys(`${key}*`));
        expect(keys).toHaveLength(1);
        return Number(await client.memory('USAGE', keys[0]));
      };
      const afterOne = await sizeAfter(1);
      const afterFiveHundred = await sizeAfter(499);
      // A fractional token count is a longer string than an integer (the tokens left, and the
      // most the bucket has held), and that is all that grows.
      expect(afterFiveHundred).toBeLessThanOrEqual(afterOne + 48);
      expect(afterFiveHundred).toBeLessThan(200);
    },
  );

  it("the token bucket and GCRA read Redis TIME, never the process clock (the caller's clock; seed 000)", async () => {
    const client = redis().shared;
    const store = new RedisStore({ client });
    const serverMicros = async () => {
      const [s, us] = await client.time();
      return Number(s) * 1e6 + Number(us);
    };
    const realDateNow = Date.now;
    const before = await serverMicros();
    const bucketKey = newKey();
    const gcraKey = newKey();
    try {
      Date.now = () => realDateNow() + 3_600_000;
      await consumeOne(store, bucketKey, policy('1m', 5, 'token-bucket'));
      await consumeOne(store, gcraKey, policy('1m', 5, 'leaky-bucket'));
    } finally {
      Date.now = realDateNow;
    }
    const after = await serverMicros();
    // The bucket's state packs five doubles; the second is when its tokens were counted.
    const at = (await client.getBuffer(bucketKey))!.readDoubleLE(8);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
    // GCRA's state packs five doubles too; the first is when the bucket is empty again: now plus
    // one emission interval of 12 s.
    const tat = (await client.getBuffer(gcraKey))!.readDoubleLE(0);
    expect(tat - 12_000_000).toBeGreaterThanOrEqual(before);
    expect(tat - 12_000_000).toBeLessThanOrEqual(after);
  });

  it('every write leaves a TTL of at most one window (no TTL in the Lua version; seed 004)', async () => {
    const client = redis().shared;
    const store = new RedisStore({ client });
    for (const [period, ms] of [
      ['250ms', 250],
      ['30s', 30_000],
      ['1d', 86_400_000],
    ] as const) {
      const key = newKey();
      await consumeOne(store, key, policy(period, 2), 1);
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(ms);
    }
  });

  it.each<Algorithm>([...RATE_ALGORITHMS])(
    "%s writes only the key it is given and its allowed decisions' ids, always with a TTL (keys left without a TTL; seed 004)",
    async (algorithm) => {
      const client = redis().shared;
      const store = new RedisStore({ client });
      const tag = `seed:{${randomUUID()}}`;
      const key = `${tag}:k`;
      const p = policy('30s', 2, algorithm);
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await consumeOne(store, key, p)).allowed);

      expect(answers).toEqual([true, true, false, false]);
      const written = await client.keys(`${tag}*`);
      expect(stateKeys(written)).toEqual([key]);
      // A rejection applied nothing, so it keeps no id; with no deadline, an id lives 5 s.
      const ids = written.filter(isDecisionIdKey);
      expect(ids).toHaveLength(2);
      for (const id of ids) {
        expect(id.startsWith(`${tag}:id:`)).toBe(true);
        expect(await client.pttl(id)).toBeGreaterThan(0);
        expect(await client.pttl(id)).toBeLessThanOrEqual(5000);
      }
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      // The sliding counter keeps a window's count through the next window.
      expect(ttl).toBeLessThanOrEqual(60_000);
      // One integer per key, stored in the key itself: the smallest Redis value there is.
      if (algorithm === 'fixed-window') {
        expect(await client.object('ENCODING', key)).toBe('int');
      }
    },
  );

  it("the fixed window's one integer counts exactly up to the largest threshold (O(N) memory for large limits; seed 003)", async () => {
    const store = new RedisStore({ client: redis().shared });
    const key = newKey();
    const p = policy('1h', 1_000_000_000, 'fixed-window');
    const steps = [
      [999_999_998, true, 2],
      [1, true, 1],
      [2, false, 1],
      [1, true, 0],
      [1, false, 0],
    ] as const;
    const answers = [];
    for (const [cost] of steps) answers.push(await consumeOne(store, key, p, cost));
    expect(answers.map((d) => [d.allowed, d.remaining])).toEqual(
      steps.map(([, allowed, remaining]) => [allowed, remaining]),
    );
  });
});
