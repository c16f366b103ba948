/**
 * Each test proves the sliding-window log avoids one defect of the source articles
 * (../shared/seeds/README.md), named with the seed file it comes from.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { MemoryStore, RedisStore, type RateLimitStore } from '../../../lib/index.js';
import { type Algorithm, ALGORITHMS } from '../../../lib/algorithms/algorithm.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { consumeOne, STORE_KINDS, TestClock, useRedis } from '../../support/stores.js';
import { entriesOf, unitsIn } from '../../support/weighted-sets.js';
import { createApp, uniquePrefix, uniqueUser, USER_HEADER } from '../http/fixtures/app.js';
import { isDecisionIdKey, stateKeys } from '../../support/decision-ids.js';

const SEED_000 = '000_7e1dcc959a08d978';
const SEED_001 = '001_97de4ce48a58e2e4';
const SEED_002 = '002_72a0c820057b0e58';
const SEED_003 = '003_e81377d34d097bd0';
const SEED_004 = '004_df9a5c683668138a';
const policy = (
  period: number | string,
  threshold: number,
  algorithm?: Algorithm,
  burst?: number,
) => resolvePolicy({ period, threshold, algorithm, burst }, 'seed test');
const newKey = () => `seed:{${randomUUID()}}`;

describe.each(STORE_KINDS)('seed defects on the %s store', (kind) => {
  const redis = useRedis(kind);
  const makeStore = (clock?: TestClock): RateLimitStore =>
    kind === 'memory'
      ? new MemoryStore({ clock: clock?.now })
      : new RedisStore({ client: redis().shared, clock: clock?.now });

  it(`${SEED_004}, ${SEED_003}, ${SEED_001}: member = timestamp collides — same-instant requests each count`, async () => {
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

  it(`${SEED_003}: counts rejected requests — a client retrying while blocked is not locked out`, async () => {
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

  it(`${SEED_003}: adds the request before counting it — a rejection leaves no trace`, async () => {
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

  it(`${SEED_003}: O(N) memory — the log never holds more than threshold entries`, async () => {
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

  it(`${SEED_001}: the lock rejects instead of waiting — concurrent requests within the limit all pass`, async () => {
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
  'seed defects of the bucket and window algorithms on the %s store',
  (kind) => {
    const redis = useRedis(kind);
    const makeStore = (clock?: TestClock): RateLimitStore =>
      kind === 'memory'
        ? new MemoryStore({ clock: clock?.now })
        : new RedisStore({ client: redis().shared, clock: clock?.now });
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it(`${SEED_000}: floored refill reset on every call — callers faster than the rate still get refills`, async () => {
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

    it(`${SEED_002}: token bucket reads TIME in seconds as if ms — the refill runs at the configured rate`, async () => {
      const store = makeStore();
      const key = newKey();
      const p = policy('1s', 10, 'token-bucket');
      const drained = await Promise.all(
        Array.from({ length: 11 }, () => consumeOne(store, key, p)),
      );
      expect(drained.filter((d) => d.allowed)).toHaveLength(10);
      // Ten a second is one per 100 ms, read from the real clock (Redis TIME on the Redis store).
      await sleep(150);
      expect((await consumeOne(store, key, p)).allowed).toBe(true);
      expect((await consumeOne(store, key, p)).allowed).toBe(false);
    });

    it(`${SEED_002}: fixed window's SET NX never increments — the window counts every request`, async () => {
      const clock = new TestClock(1_700_000_040_000);
      const store = makeStore(clock);
      const key = newKey();
      const p = policy('1m', 3, 'fixed-window');
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await consumeOne(store, key, p)).allowed);
      expect(answers).toEqual([true, true, true, false, false]);
    });

    it(`${SEED_002}: leaky bucket's SET NX never moves the drain time — it drains threshold per period, not one`, async () => {
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
      `${SEED_001}: separate GET and SET race — concurrent %s decisions never exceed the limit`,
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

describe('seed defects that need Redis', () => {
  const redis = useRedis('redis');

  it(`${SEED_001}: read-modify-write races — separate clients hammering one key never exceed the limit`, async () => {
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

  it(`${SEED_004}: app-server clock — the Redis store reads Redis TIME, never the process clock`, async () => {
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
    `${SEED_003}: O(N) memory for large limits — %s keeps one small key however many requests it counts`,
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
      // A fractional token count is a longer string than an integer, and that is all that grows.
      expect(afterFiveHundred).toBeLessThanOrEqual(afterOne + 24);
      expect(afterFiveHundred).toBeLessThan(200);
    },
  );

  it(`${SEED_000}: caller's clock — the token bucket and GCRA read Redis TIME, never the process clock`, async () => {
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
    const at = Number(await client.hget(bucketKey, 'at'));
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
    // GCRA stores the time the bucket empties: now plus one emission interval of 12 s.
    const tat = Number(await client.get(gcraKey));
    expect(tat - 12_000_000).toBeGreaterThanOrEqual(before);
    expect(tat - 12_000_000).toBeLessThanOrEqual(after);
  });

  it(`${SEED_004}: no TTL in the Lua version — every write leaves a TTL of at most one window`, async () => {
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

  it.each<Algorithm>([...ALGORITHMS])(
    `${SEED_004}: %s writes only the key it is given and its allowed decisions' ids, always with a TTL`,
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
      if (algorithm === 'fixed-window' || algorithm === 'leaky-bucket') {
        expect(await client.object('ENCODING', key)).toBe('int');
      }
    },
  );

  it(`${SEED_003}: the fixed window's one integer counts exactly up to the largest threshold`, async () => {
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

describe.each(STORE_KINDS)(`${SEED_004}: key on the raw URI — on the %s store`, (kind) => {
  const redis = useRedis(kind);
  let app: INestApplication;

  beforeAll(async () => {
    app = await createApp({
      keyPrefix: uniquePrefix(),
      ...(kind === 'redis' ? { redis: redis().url } : {}),
    });
  });
  afterAll(async () => {
    await app.close();
  });

  it('/items/1, /items/2, … share one limit, so changing the id does not bypass it', async () => {
    const user = uniqueUser();
    const codes = [];
    for (let id = 1; id <= 6; id++) {
      codes.push(
        (await request(app.getHttpServer()).get(`/items/${id}`).set(USER_HEADER, user)).status,
      );
    }
    expect(codes).toEqual([200, 200, 200, 429, 429, 429]);
    const withQuery = await request(app.getHttpServer()).get('/items/7?x=1').set(USER_HEADER, user);
    expect(withQuery.status).toBe(429);
  });
});
