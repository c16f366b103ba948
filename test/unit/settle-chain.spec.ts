/**
 * A settlement through the stores the module puts in front of the primary: it goes where its
 * reservation was counted (the primary, the fallback, or nowhere), and the block cache lets a
 * give-back end a local block, as a refund does, while a charge leaves it standing.
 */
import { describe, expect, it } from '@jest/globals';
import { MemoryStore, type RateLimitDecision } from '../../lib/index.js';
import { ResilientStore } from '../../lib/stores/resilience/resilient.store.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { BlockCacheStore } from '../../lib/stores/block-cache.js';
import { degradedDecision } from '../../lib/stores/decision.js';
import { fixedAnswer } from '../../lib/stores/resilience/store-error-answers.js';
import { TestClock } from '../support/stores.js';

const policy = resolvePolicy({ algorithm: 'fixed-window', period: '1m', threshold: 10 }, 'chain');
const KEY = ['settle-chain'];
const silent = { warn: () => {}, log: () => {} };

/** What a request of no cost finds left in `store`. */
const left = async (store: MemoryStore) => (await store.peek(KEY, [policy], [0])).remaining;

describe('a settlement through the resilient store', () => {
  function stores() {
    const clock = new TestClock();
    const primary = new MemoryStore({ clock: clock.now });
    const fallback = new MemoryStore({ clock: clock.now });
    const resilient = new ResilientStore(primary, {
      timeoutMs: 1000,
      onStoreError: 'memory',
      fallback,
      ownsPrimary: true,
      logger: silent,
    });
    return { primary, fallback, resilient };
  }
  const settle = (store: ResilientStore, delta: number, of: RateLimitDecision) =>
    store.settle(KEY, [policy], [delta], of);

  it('goes to the primary for a reservation the primary counted', async () => {
    const { primary, fallback, resilient } = stores();
    const reservation = await resilient.consume(KEY, [policy], [4]);
    expect(await settle(resilient, 3, reservation)).toMatchObject({ remaining: 3 });
    expect([await left(primary), await left(fallback)]).toEqual([3, 10]);
    await resilient.close();
  });

  it('goes to the fallback for a reservation it counted, and nowhere for one nobody counted', async () => {
    const { primary, fallback, resilient } = stores();
    // What the fallback answers in an outage: its own decision, marked.
    const counted = degradedDecision(await fallback.consume(KEY, [policy], [4]), 'memory');
    await settle(resilient, -3, counted);
    const allowed = fixedAnswer([policy], 'allow');
    expect(await settle(resilient, 5, allowed)).toBe(allowed);
    expect([await left(primary), await left(fallback)]).toEqual([10, 9]);
    await resilient.close();
  });

  it.each(['guarding a primary', 'over the memory store alone'])(
    'settles marked limits in the memory store under memory, and nowhere under allow (%s)',
    async (chain) => {
      const memory = new MemoryStore({ clock: new TestClock().now });
      const primary = chain === 'guarding a primary' ? new MemoryStore() : memory;
      const resilient = new ResilientStore(primary, {
        timeoutMs: 1000,
        onStoreError: 'deny',
        fallback: memory,
        ownsPrimary: false,
        logger: silent,
      });
      const limits = (answerWithout: 'memory' | 'allow') => ({
        keys: KEY,
        policies: [policy],
        costs: [4],
        answerWithout,
      });
      const reservation = await resilient.execute({ op: 'consume', limits: limits('memory') });
      expect(reservation.degraded).toBe('memory');
      await settle(resilient, 2, reservation);
      expect(await left(memory)).toBe(4);
      const allowed = await resilient.execute({ op: 'consume', limits: limits('allow') });
      expect(allowed).toMatchObject({ allowed: true, degraded: 'allow' });
      expect(await settle(resilient, 2, allowed)).toBe(allowed);
      expect(await left(memory)).toBe(4);
      if (primary !== memory) expect(await left(primary)).toBe(10);
      await resilient.close();
    },
  );
});

describe('a settlement through the block cache', () => {
  async function blocked() {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.now });
    const cache = new BlockCacheStore(store, { clock: clock.now });
    const reservation = await cache.consume(KEY, [policy], [10]);
    expect((await cache.consume(KEY, [policy], [1])).allowed).toBe(false);
    return { store, cache, reservation };
  }

  it('ends the local block when it gives something back', async () => {
    const { cache, reservation } = await blocked();
    await cache.settle(KEY, [policy], [-3], reservation);
    expect(await cache.consume(KEY, [policy], [1])).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('leaves the block standing when it charges more: the key is only further over', async () => {
    const { store, cache, reservation } = await blocked();
    await cache.settle(KEY, [policy], [5], reservation);
    expect((await cache.consume(KEY, [policy], [1])).allowed).toBe(false);
    // The store agrees: 15 of 10 recorded.
    expect(await store.refund(KEY, [policy], [6])).toMatchObject({ allowed: true, remaining: 1 });
  });
});
