/**
 * The ledgers of requests in flight, kept for policies that count only some outcomes: a rejection
 * that only requests whose outcome is unknown cause answers "ask again" and starts no lock-out;
 * once their outcomes are known, one the counted requests alone cause locks out as ever. For
 * every rate algorithm, on the memory store and on Redis through every client, on an exact
 * simulated timeline; on Redis, the ledger lives no longer than its key's period.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { RouteKeys } from '../../../lib/keys/route-keys.js';
import { outcomesPendingOf } from '../../../lib/stores/decision.js';
import { type Limits } from '../../../lib/store-contract/store-call.js';
import { MemoryStore, RedisStore, type RateLimitDecision } from '../../../lib/index.js';
import { type ClientKind } from '../../support/clients.js';
import { STORE_TARGETS, TestClock, useRedis } from '../../support/stores.js';

describe.each(STORE_TARGETS)('ledgers of requests in flight on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');

  async function setup() {
    const clock = new TestClock();
    if (target === 'memory') return { clock, store: new MemoryStore({ clock: clock.now }) };
    const store = new RedisStore({
      client: await redis().connect(target as ClientKind),
      clock: clock.now,
    });
    await store.warmUp();
    return { clock, store };
  }

  describe.each(RATE_ALGORITHMS.map((a) => [a]))('%s', (algorithm) => {
    it('a limit full of requests in flight asks again without a lock-out; once they fail, it locks out', async () => {
      const { clock, store } = await setup();
      const policy = resolvePolicy(
        { algorithm, period: '10s', threshold: 2, blockDuration: '30s' },
        'ledgers',
      );
      const key = `ledger:{${randomUUID()}}`;
      const limits: Limits = {
        keys: [key],
        policies: [policy],
        costs: [1],
        ledgers: [RouteKeys.ledgerOf(key)],
      };
      const consume = () => store.execute({ op: 'consume', limits });
      /** The outcome of `of` is known: given back when it does not count, kept when it does. */
      const ended = (of: RateLimitDecision, givesBack: boolean) =>
        store.execute({
          op: 'refund',
          limits: { ...limits, costs: [givesBack ? 1 : 0] },
          of,
          counted: [1],
        });

      const first = await consume();
      clock.advance(1);
      const second = await consume();
      expect([first.allowed, second.allowed]).toEqual([true, true]);
      clock.advance(1);
      const waiting = await consume();
      expect(waiting).toMatchObject({ allowed: false, retryAfterMs: 1000 });
      expect(outcomesPendingOf(waiting.policies[0])).toBe(true);

      // The first succeeds: it is given back, and the one that waited fits.
      await ended(first, true);
      clock.advance(1);
      const third = await consume();
      expect(third.allowed).toBe(true);
      // Both fail: they count, and the next request is rejected by them alone, and locked out.
      await ended(second, false);
      await ended(third, false);
      clock.advance(1);
      const locked = await consume();
      expect(locked).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
      expect(outcomesPendingOf(locked.policies[0])).toBe(false);
      clock.advance(10_000);
      expect(await consume()).toMatchObject({ allowed: false, retryAfterMs: 20_000 });
    });
  });

  if (target !== 'memory') {
    it('the ledger has a TTL while it holds requests, and is gone once their outcomes are known', async () => {
      const { store } = await setup();
      const client = redis().shared;
      const policy = resolvePolicy({ period: '10s', threshold: 5 }, 'ledgers');
      const key = `ledger:{${randomUUID()}}`;
      const ledger = RouteKeys.ledgerOf(key);
      const limits: Limits = { keys: [key], policies: [policy], costs: [1], ledgers: [ledger] };
      const decision = await store.execute({ op: 'consume', limits });
      const ttl = await client.pttl(ledger);
      expect(ttl).toBeGreaterThan(0);
      await store.execute({ op: 'refund', limits, of: decision, counted: [1] });
      expect(await client.exists(ledger)).toBe(0);
    });
  }
});
