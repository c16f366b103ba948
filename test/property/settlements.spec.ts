/**
 * Random timelines of reservations (a consume of the estimate), settlements at a random actual
 * (charging beyond the estimate, past the limit if need be, or giving back), refunds of a
 * request, and pauses that move the windows on, under a simulated clock. The memory store and the
 * Redis store (Functions and scripts, through ioredis and node-redis) must give identical answers,
 * and agree with the reference model: exactly, except that the sliding log's wait may be longer,
 * never shorter, while a request given back from the middle of the log is still in the window
 * (its marks keep the units given back; see `sw_blocker`).
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { type RateAlgorithm as Algorithm } from '../../lib/algorithms/algorithm.js';
import { algorithmOf, RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import {
  MemoryStore,
  type RateLimitDecision,
  type RateLimitStore,
  RedisStore,
} from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { resolvePolicy, type ResolvedPolicy } from '../../lib/policy/rate-limit.policy.js';
import { toMicros } from '../../lib/stores/clock.js';
import {
  bucketLevels,
  type ModelAnswer,
  type ModelPolicy,
  ReferenceModel,
} from '../model/reference.js';
import { startsFrom, windowsAt } from '../support/calendar-windows.js';
import { useRedis } from '../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);
const BUCKETS = new Set<Algorithm>(['token-bucket', 'leaky-bucket']);

const policyArb = (algorithm: fc.Arbitrary<Algorithm>) =>
  fc
    .record({
      algorithm,
      period: fc.constantFrom('250ms', '1s', '1500ms'),
      threshold: fc.integer({ min: 1, max: 12 }),
      burst: fc.option(fc.integer({ min: 1, max: 16 }), { nil: undefined }),
    })
    .map(({ burst, ...p }) =>
      BUCKETS.has(p.algorithm) && burst !== undefined ? { ...p, burst } : p,
    );

const stepArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('reserve' as const),
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 9 })),
    }),
  },
  {
    weight: 4,
    // Each policy's actual, from nothing used to well over the estimate.
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      pick: fc.nat(),
      actuals: fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 3, maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('refund' as const),
      pick: fc.nat(),
      part: fc.integer({ min: 1, max: 9 }),
    }),
  },
  {
    weight: 3,
    // Mostly within a window, sometimes past one or two: settlements after the window moved.
    arbitrary: fc.record({
      op: fc.constant('wait' as const),
      us: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 2_000_000 })),
    }),
  },
);

const timelineArb = (algorithm: fc.Arbitrary<Algorithm>, policies: number) =>
  fc.record({
    policies: fc.array(policyArb(algorithm), { minLength: policies, maxLength: policies }),
    // Windows of irregular lengths, in turn, as a calendar's are: for the window algorithms. In
    // whole seconds, as a calendar's starts are whole ms apart by hours (which the fixed window's
    // numbering of calendar windows relies on: see fixed-window.lua).
    calendar: fc.option(
      fc.array(
        fc.integer({ min: 1, max: 3 }).map((s) => s * 1_000_000),
        { minLength: 2, maxLength: 5 },
      ),
      { nil: undefined, freq: 1 },
    ),
    startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
    steps: fc.array(stepArb, { minLength: 20, maxLength: 60 }),
  });

type Timeline = ReturnType<typeof timelineArb> extends fc.Arbitrary<infer T> ? T : never;

const view = (d: RateLimitDecision) => ({
  allowed: d.allowed,
  policies: d.policies.map(({ allowed, remaining, retryAfterMs, resetAfterMs }) => ({
    allowed,
    remaining,
    retryAfterMs,
    resetAfterMs,
  })),
});

/**
 * Window starts from before the timeline to past its longest end (60 steps of at most 2 s), one
 * window of each length in turn: windows as irregular as a calendar's, and much shorter.
 */
function calendarStarts(startUs: number, lengthsUs: readonly number[]): number[] {
  const lengths: number[] = [];
  for (let total = 0, i = 0; total < 130_000_000; i++) {
    lengths.push(lengthsUs[i % lengthsUs.length]);
    total += lengths[lengths.length - 1];
  }
  // Starts fall on whole ms, as a calendar's do.
  return startsFrom(Math.floor(startUs / 1000) * 1000 - 10_000_000, lengths);
}

describe('settlements: a reservation settled at its actual usage, on every store alike', () => {
  const redis = useRedis('redis');
  let nodeRedis: RedisClient;

  beforeAll(async () => {
    nodeRedis = await redis().connect('node-redis');
  });

  function storesAt(clock: () => number): RateLimitStore[] {
    const client = redis().shared;
    return [
      new MemoryStore({ clock }),
      new RedisStore({ client, clock }),
      new RedisStore({ client, clock, functions: false }),
      new RedisStore({ client: nodeRedis, clock }),
    ];
  }

  /** The same call on every store, which must all answer alike; returns every answer. */
  async function onAll(
    stores: RateLimitStore[],
    call: (store: RateLimitStore, i: number) => Promise<RateLimitDecision>,
  ): Promise<RateLimitDecision[]> {
    const answers: RateLimitDecision[] = [];
    for (const [i, store] of stores.entries()) answers.push(await call(store, i));
    for (const answer of answers.slice(1)) expect(view(answer)).toEqual(view(answers[0]));
    return answers;
  }

  async function run(t: Timeline) {
    let us = t.startUs;
    const clock = () => us / 1000;
    const stores = storesAt(clock);
    const starts = t.calendar && calendarStarts(t.startUs, t.calendar);
    const policies: ResolvedPolicy[] = t.policies.map((p, i) => {
      const resolved = resolvePolicy({ ...p, name: `p${i}` }, 'settlements');
      const byCalendar = starts && algorithmOf(p.algorithm).followsCalendar;
      return byCalendar ? { ...resolved, calendar: windowsAt(starts) } : resolved;
    });
    const modelPolicies: ModelPolicy[] = policies.map((p, i) => ({
      algorithm: t.policies[i].algorithm,
      limit: p.threshold,
      burst: p.burst,
      ...(p.calendar && starts
        ? { starts, periodUs: Math.max(...t.calendar!) }
        : { periodUs: p.periodUs }),
    }));
    const id = randomUUID();
    const keys = stores.map((_, s) => policies.map((p) => `st:{${id}}:${s}:${p.id}`));
    const modelKeys = policies.map((p) => p.id);
    const model = new ReferenceModel();
    // Reservations not yet settled nor refunded: when they arrived, their estimate, each store's.
    const open: Array<{ at: number; cost: number; answers: RateLimitDecision[] }> = [];
    // Per sliding-log policy, until when a request given back from the middle of the log is in it.
    const gapUntil = policies.map(() => -Infinity);

    /** Marks each sliding log's give-back from the entry at `at` when that is not its newest. */
    const giveBack = (at: number, now: number, deltas: number[]) =>
      modelPolicies.forEach((p, i) => {
        if (p.algorithm !== 'sliding-window' || deltas[i] >= 0) return;
        const inWindow = model
          .history(modelKeys[i])
          .filter((e) => e.t > now - p.periodUs && e.cost > 0);
        const newest = Math.max(...inWindow.map((e) => e.t));
        if (inWindow.some((e) => e.t === at) && at !== newest) {
          gapUntil[i] = Math.max(gapUntil[i], at + p.periodUs);
        }
      });

    const expectModel = (
      got: RateLimitDecision,
      want: { allowed: boolean; answers: ModelAnswer[] },
      now: number,
    ) => {
      expect(got.allowed).toBe(want.allowed);
      got.policies.forEach((answer, i) => {
        const w = want.answers[i];
        const { allowed, remaining, resetAfterMs } = answer;
        expect({ policy: i, allowed, remaining, resetAfterMs }).toEqual({
          policy: i,
          allowed: w.allowed,
          remaining: w.remaining,
          resetAfterMs: w.resetAfterMs,
        });
        const retry = w.retryAfterMs < 0 ? Infinity : w.retryAfterMs;
        if (now >= gapUntil[i]) expect(answer.retryAfterMs).toBe(retry);
        else expect(answer.retryAfterMs).toBeGreaterThanOrEqual(retry);
      });
    };

    /**
     * A bucket's give-back is no more than it would hold had the reservation been for the rest:
     * the reservation's surplus, as far as it never spilt over the top (full tokens, or an empty
     * GCRA) at any moment since, judged from the levels of every event after the reservation's.
     */
    const withinWhatWasSpared = (reserved: { at: number; cost: number }, deltas: number[]) =>
      modelPolicies.forEach((p, i) => {
        if (!BUCKETS.has(p.algorithm) || deltas[i] >= 0) return;
        const history = model.history(modelKeys[i]);
        const levels = bucketLevels(history, p);
        const given = levels.pop()!;
        // The last event that can be the reservation's: any later one is sure to be after it.
        let own = history.length - 2;
        while (history[own].t !== reserved.at || history[own].cost !== reserved.cost) own--;
        const after = [...levels.slice(own + 1), { before: given.before, after: given.before }];
        if (p.algorithm === 'token-bucket') {
          const most = Math.max(...after.map((l) => Math.max(l.before, l.after)));
          const room = Math.min(-deltas[i], p.burst - most);
          expect(given.after - given.before).toBeLessThanOrEqual(room + 1e-9);
        } else {
          const least = Math.min(...after.map((l) => Math.min(l.before, l.after)));
          const interval = Math.ceil(p.periodUs / p.limit);
          expect(given.before - given.after).toBeLessThanOrEqual(
            Math.min(-deltas[i] * interval, least),
          );
        }
      });

    for (const step of t.steps) {
      const now = toMicros(clock());
      if (step.op === 'wait') {
        us += step.us;
      } else if (step.op === 'reserve') {
        const costs = policies.map(() => step.cost);
        const expected = model.decide(modelKeys, modelPolicies, costs, now);
        const answers = await onAll(stores, (s, i) => s.consume(keys[i], policies, costs));
        expectModel(answers[0], expected, now);
        if (answers[0].allowed) open.push({ at: now, cost: step.cost, answers });
      } else if (open.length > 0) {
        const [reserved] = open.splice(step.pick % open.length, 1);
        const deltas =
          step.op === 'settle'
            ? policies.map((_, i) => step.actuals[i] - reserved.cost)
            : policies.map(() => -Math.min(step.part, reserved.cost));
        giveBack(reserved.at, now, deltas);
        const expected = model.settle(modelKeys, modelPolicies, deltas, reserved.at, now);
        withinWhatWasSpared(reserved, deltas);
        const answers = await onAll(stores, (s, i) =>
          step.op === 'settle'
            ? s.settle!(keys[i], policies, deltas, reserved.answers[i])
            : s.refund!(
                keys[i],
                policies,
                deltas.map((d) => -d),
                reserved.answers[i],
              ),
        );
        expectModel(answers[0], expected, now);
      }
    }
  }

  it.each(RATE_ALGORITHMS)(
    `%s: ${RUNS} timelines of reservations, settlements and refunds`,
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(timelineArb(fc.constant(algorithm), 1), (t) => run(t)),
        { numRuns: RUNS },
      );
    },
    120_000,
  );

  it(`mixed algorithms: ${RUNS} timelines of routes of two or three policies, each settled by its own delta`, async () => {
    const mixed = fc
      .integer({ min: 2, max: 3 })
      .chain((n) => timelineArb(fc.constantFrom(...RATE_ALGORITHMS), n));
    await fc.assert(
      fc.asyncProperty(mixed, (t) => run(t)),
      { numRuns: RUNS },
    );
  }, 120_000);
});
