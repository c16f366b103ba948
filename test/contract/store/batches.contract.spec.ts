/**
 * Decisions ready in the same turn of the event loop go to Redis as one call of the batch
 * function, and each is decided exactly as it would be alone: checked on every client, as a
 * function and as a script, against the same decisions made one by one.
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from '@jest/globals';
import { type RateLimitDecision, RedisStore } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { ALL_CLIENT_KINDS } from '../../support/clients.js';
import { TestClock, useRedis } from '../../support/stores.js';

const WINDOW = resolvePolicy({ algorithm: 'fixed-window', period: '10s', threshold: 5 }, 'b');
const BUCKET = resolvePolicy({ algorithm: 'token-bucket', period: '10s', threshold: 4 }, 'b');
const LOG = resolvePolicy({ algorithm: 'sliding-window', period: '10s', threshold: 3 }, 'b');
const LEASES = resolvePolicy({ algorithm: 'concurrency', period: '10s', threshold: 2 }, 'b');

/** How many calls of each kind Redis counted since the last CONFIG RESETSTAT. */
function callsOf(stats: string): Record<string, number> {
  const calls: Record<string, number> = {};
  for (const [, command, count] of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) {
    calls[command] = Number(count);
  }
  return calls;
}

describe.each(ALL_CLIENT_KINDS)('batches of decisions (%s)', (kind) => {
  const redis = useRedis('redis');
  const calls = async () => callsOf(String(await redis().shared.info('commandstats')));

  beforeEach(async () => {
    await redis().shared.config('RESETSTAT');
  });

  describe.each([true, false])('functions: %s', (functions) => {
    const open = async (batchSize?: number, clock?: TestClock) => {
      const store = new RedisStore({
        client: await redis().connect(kind),
        functions,
        batchSize,
        clock: clock?.now,
        ownsClient: true,
      });
      await store.warmUp();
      await redis().shared.config('RESETSTAT');
      return store;
    };
    const scriptCalls = (counted: Record<string, number>) =>
      (counted.fcall ?? 0) + (counted.evalsha ?? 0) + (counted.eval ?? 0);

    it('a turn of 100 decisions goes out in batches of at most batchSize, and 60 of 100 are allowed', async () => {
      const store = await open(32);
      const policy = resolvePolicy({ period: '1m', threshold: 60 }, 'b');
      const key = `b:{${randomUUID()}}:0`;
      const decisions = await Promise.all(
        Array.from({ length: 100 }, () => store.consume([key], [policy], [1])),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(60);
      // The first goes alone, Redis being idle; then at most 32 per call: 32 + 32 + 32 + 3, five
      // calls where one by one would take a hundred. A turn that runs past the store's bound on
      // waiting (a slow client, a busy machine) sends what waits early, in more calls.
      const counted = scriptCalls(await calls());
      expect(counted).toBeGreaterThanOrEqual(5);
      expect(counted).toBeLessThanOrEqual(20);
      await store.close();
    });

    it('a decision that fails in Redis fails alone; the rest of its batch is decided', async () => {
      const store = await open();
      const [broken, k] = [`b:{${randomUUID()}}:0`, `b:{${randomUUID()}}:0`];
      await redis().shared.hset(broken, 'not', 'a counter');
      const settled = await Promise.allSettled([
        store.consume([k], [WINDOW], [1]),
        store.consume([broken], [WINDOW], [1]),
        store.consume([k], [WINDOW], [1]),
      ]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({
        name: 'BatchedDecisionError',
        message: expect.stringMatching(/WRONGTYPE/),
      });
      expect((settled[2] as PromiseFulfilledResult<RateLimitDecision>).value.remaining).toBe(3);
      // The first alone, the other two as a batch.
      expect(scriptCalls(await calls())).toBe(2);
      await store.close();
    });

    it('a lone decision goes out as one call of the decision itself', async () => {
      const store = await open();
      await store.consume([`b:{${randomUUID()}}:0`], [WINDOW], [1]);
      const counted = await calls();
      expect(scriptCalls(counted)).toBe(1);
      // Not the batch script: a lone decision as a script runs the one with its algorithm only.
      if (!functions) expect(counted.evalsha).toBe(1);
      await store.close();
    });

    it('mixed operations on shared keys answer as the same operations made one by one', async () => {
      const clocks = { batched: new TestClock(), alone: new TestClock() };
      const batched = await open(32, clocks.batched);
      const alone = await open(1, clocks.alone);
      const tag = randomUUID();
      // The steps of each phase are sent in one turn; a phase uses the decisions of the one before.
      type Step = (
        store: RedisStore,
        keyOf: (name: string) => string,
        earlier: RateLimitDecision[],
      ) => Promise<RateLimitDecision>;
      const phases: Step[][] = [
        [
          (s, k) => s.consume([k('w')], [WINDOW], [2]),
          (s, k) => s.consume([k('w'), k('t')], [WINDOW, BUCKET], [2, 1]),
          (s, k) => s.reserve([k('t')], [BUCKET], [3], 5000),
          (s, k) => s.consume([k('l')], [LEASES], [1]),
          (s, k) => s.consume([k('l')], [LEASES], [1]),
          (s, k) => s.consume([k('l')], [LEASES], [1]),
          (s, k) => s.peek([k('w')], [WINDOW], [1]),
          (s, k) => s.consume([k('g')], [LOG], [2]),
          (s, k) => s.consume([k('w')], [WINDOW], [2]),
        ],
        [
          (s, k, e) => s.refund([k('w')], [WINDOW], [2], e[0]),
          (s, k, e) => s.release([k('l')], [LEASES], [1], e[3]),
          (s, k, e) => s.settle([k('g')], [LOG], [-1], e[7]),
          (s, k, e) => s.settle([k('w'), k('t')], [WINDOW, BUCKET], [1, 2], e[1]),
          (s, k) => s.consume([k('l')], [LEASES], [1]),
          (s, k) =>
            s.block(
              [k('b')],
              [resolvePolicy({ period: '1s', threshold: 1, blockDuration: '5s' }, 'b')],
              5000,
            ),
          (s, k) => s.consume([k('w')], [WINDOW], [1]),
          (s, k) => s.reset([k('t')], [BUCKET], [1]),
          (s, k) => s.consume([k('t')], [BUCKET], [4]),
        ],
      ];
      const run = async (store: RedisStore, together: boolean) => {
        const clock = together ? clocks.batched : clocks.alone;
        const keyOf = (name: string) => `b:{${tag}-${together}}:${name}`;
        const all: RateLimitDecision[][] = [];
        for (const steps of phases) {
          const earlier = all.at(-1) ?? [];
          if (together) {
            all.push(await Promise.all(steps.map((step) => step(store, keyOf, earlier))));
          } else {
            const answers: RateLimitDecision[] = [];
            for (const step of steps) answers.push(await step(store, keyOf, earlier));
            all.push(answers);
          }
          clock.advance(1500);
        }
        return all;
      };
      const together = await run(batched, true);
      const batchCalls = scriptCalls(await calls());
      const oneByOne = await run(alone, false);
      expect(together).toEqual(oneByOne);
      // In each phase, the first step alone (Redis was idle), then the rest as one batch (or
      // more, in a turn that ran long): fewer calls than steps.
      expect(batchCalls).toBeGreaterThanOrEqual(4);
      expect(batchCalls).toBeLessThan(phases.flat().length);
      // The answers are not trivial: some allowed, some not.
      expect(together.flat().some((d) => !d.allowed)).toBe(true);
      await batched.close();
      await alone.close();
    });
  });
});
