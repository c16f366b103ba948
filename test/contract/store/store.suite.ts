/** The store contract as a function, so one suite runs on memory, one Redis and a Redis Cluster. */
import { randomUUID } from 'node:crypto';
import { expect, it } from '@jest/globals';
import { type Cluster, type Redis } from 'ioredis';
import { MemoryStore, RedisStore, type RateLimitStore } from '../../../lib/index.js';
import { type RedisClient } from '../../../lib/stores/redis/clients/redis-client.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { SlotGroups } from '../../../lib/stores/redis/slot-groups.js';
import { consumeOne, TestClock } from '../../support/stores.js';
import { entriesOf, unitsIn } from '../../support/weighted-sets.js';

export const policy = (period: number | string, threshold: number) =>
  resolvePolicy({ period, threshold }, 'test');

/** Where the Redis store contract runs: the client the store gets, and one to look at its keys. */
export interface ContractTarget {
  /** A new connected client, of either library, for each store. */
  storeClient(): Promise<RedisClient>;
  /** An ioredis client on the same server or cluster, for inspecting what the store wrote. */
  inspect(): Redis | Cluster;
  /** Decide with Redis Functions (the default) or with scripts, as a server without them would. */
  functions?: boolean;
  /** The store's `slotGroups`: its keys then stand in Redis under their groups' tags. */
  slotGroups?: number;
}

/**
 * Registers the store contract's tests in the surrounding describe block: on the memory store
 * when `target` is omitted, else on a `RedisStore` over a new client of the target per test.
 */
export function storeContract(target?: ContractTarget): void {
  async function makeStore(clock?: TestClock): Promise<RateLimitStore> {
    const now = clock?.now;
    if (target === undefined) return new MemoryStore({ clock: now });
    const functions = target.functions ?? true;
    const store = new RedisStore({
      client: await target.storeClient(),
      clock: now,
      functions,
      slotGroups: target.slotGroups,
    });
    await store.warmUp();
    expect(store.usesFunctions).toBe(functions);
    return store;
  }
  const key = () => `contract:{${randomUUID()}}`;

  it('answers an exact timeline: allowed, remaining, retry-after and reset-after in ms', async () => {
    const clock = new TestClock();
    const store = await makeStore(clock);
    const k = key();
    const p = policy('1s', 3);
    const at = async (t: number) => {
      clock.ms = 1_700_000_000_000 + t;
      return consumeOne(store, k, p, 1);
    };

    expect(await at(0)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 2,
      retryAfterMs: 0,
      resetAfterMs: 1000,
    });
    expect(await at(100)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 1,
      retryAfterMs: 0,
      resetAfterMs: 1000,
    });
    expect(await at(200)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 0,
      retryAfterMs: 0,
      resetAfterMs: 1000,
    });
    expect(await at(300)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      retryAfterMs: 700,
      resetAfterMs: 900,
    });
    expect(await at(999)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      retryAfterMs: 1,
      resetAfterMs: 201,
    });
    // The request at t=0 leaves the window exactly one period later.
    expect(await at(1000)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 0,
      retryAfterMs: 0,
      resetAfterMs: 1000,
    });
    expect(await at(1050)).toEqual({
      allowed: false,
      limit: 3,
      remaining: 0,
      retryAfterMs: 50,
      resetAfterMs: 950,
    });
    expect(await at(2200)).toEqual({
      allowed: true,
      limit: 3,
      remaining: 2,
      retryAfterMs: 0,
      resetAfterMs: 1000,
    });
  });

  it('rounds sub-millisecond waits up, never down to 0', async () => {
    const clock = new TestClock(1_700_000_000_000);
    const store = await makeStore(clock);
    const k = key();
    const p = policy('1s', 1);
    expect((await consumeOne(store, k, p, 1)).allowed).toBe(true);
    clock.ms += 999.5;
    expect(await consumeOne(store, k, p, 1)).toMatchObject({
      allowed: false,
      retryAfterMs: 1,
      resetAfterMs: 1,
    });
  });

  it('never records a rejected request, however many arrive', async () => {
    const clock = new TestClock();
    const store = await makeStore(clock);
    const k = key();
    const p = policy('1s', 2);
    const start = clock.ms;
    expect((await consumeOne(store, k, p, 1)).allowed).toBe(true);
    expect((await consumeOne(store, k, p, 1)).allowed).toBe(true);
    for (let t = 1; t < 1000; t += 7) {
      clock.ms = start + t;
      expect((await consumeOne(store, k, p, 1)).allowed).toBe(false);
    }
    clock.ms = start + 1000;
    expect(await consumeOne(store, k, p, 1)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('counts each of the requests that arrive at the very same microsecond, in one entry', async () => {
    const clock = new TestClock();
    const store = await makeStore(clock);
    const k = key();
    const p = policy('1m', 50);
    for (let i = 0; i < 50; i++) {
      expect(await consumeOne(store, k, p, 1)).toMatchObject({ allowed: true, remaining: 49 - i });
    }
    expect((await consumeOne(store, k, p, 1)).allowed).toBe(false);
    if (target !== undefined) {
      const stored = target.slotGroups ? new SlotGroups(target.slotGroups).place(k) : k;
      expect(await unitsIn(target.inspect(), stored)).toBe(50);
      expect((await entriesOf(target.inspect(), stored)).map((e) => e.units)).toEqual([50]);
    }
  });

  it('charges a cost of several requests at once, all or nothing', async () => {
    const clock = new TestClock();
    const store = await makeStore(clock);
    const k = key();
    const p = policy('10s', 5);
    expect(await consumeOne(store, k, p, 3)).toMatchObject({ allowed: true, remaining: 2 });
    clock.advance(1000);
    expect(await consumeOne(store, k, p, 3)).toEqual({
      allowed: false,
      limit: 5,
      remaining: 2,
      retryAfterMs: 9000,
      resetAfterMs: 9000,
    });
    expect(await consumeOne(store, k, p, 2)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('lets exactly 10 of 100 concurrent decisions through, with the real clock', async () => {
    const store = await makeStore();
    const k = key();
    const p = policy(60, 10);
    const decisions = await Promise.all(
      Array.from({ length: 100 }, () => consumeOne(store, k, p, 1)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    const remaining = decisions.filter((d) => d.allowed).map((d) => d.remaining);
    expect(remaining.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('keeps keys apart', async () => {
    const store = await makeStore();
    const p = policy(60, 1);
    const [a, b] = [key(), key()];
    expect((await consumeOne(store, a, p, 1)).allowed).toBe(true);
    expect((await consumeOne(store, b, p, 1)).allowed).toBe(true);
    expect((await consumeOne(store, a, p, 1)).allowed).toBe(false);
  });
}
