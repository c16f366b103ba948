/**
 * Random timelines of weighted requests and refunds, on the sliding log and on concurrency leases,
 * under a simulated clock. The memory store and the Redis store (Functions and scripts) must give
 * identical answers. The sliding log must also agree with the reference model: admission,
 * remaining and reset exactly; the wait exactly too, except while a request refunded from the
 * middle of the log is still in the window, when it may be longer but never shorter.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  MemoryStore,
  type RateLimitDecision,
  type RateLimitStore,
  RedisStore,
} from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { toMicros } from '../../lib/stores/clock.js';
import { type Event, ReferenceModel } from '../model/reference.js';
import { useRedis } from '../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);

const stepArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('consume' as const),
      cost: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 9 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('refundOf' as const),
      pick: fc.nat(),
      part: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('refund' as const),
      cost: fc.integer({ min: 1, max: 9 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('wait' as const),
      us: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 1_500_000 })),
    }),
  },
);

const timelineArb = fc.record({
  threshold: fc.integer({ min: 1, max: 12 }),
  period: fc.constantFrom('250ms', '1s', '1500ms'),
  startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
  steps: fc.array(stepArb, { minLength: 20, maxLength: 60 }),
});

type Timeline = typeof timelineArb extends fc.Arbitrary<infer T> ? T : never;

const view = (d: RateLimitDecision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
});

describe('weighted entries: refunds stay exact', () => {
  const redis = useRedis('redis');

  /** The same call on every store, which must all answer alike; returns the first answer. */
  async function onAll(
    stores: RateLimitStore[],
    call: (store: RateLimitStore, i: number) => Promise<RateLimitDecision>,
  ): Promise<RateLimitDecision[]> {
    const answers: RateLimitDecision[] = [];
    for (const [i, store] of stores.entries()) answers.push(await call(store, i));
    for (const answer of answers.slice(1)) expect(view(answer)).toEqual(view(answers[0]));
    return answers;
  }

  function storesAt(clock: () => number): RateLimitStore[] {
    const client = redis().shared;
    return [
      new MemoryStore({ clock }),
      new RedisStore({ client, clock }),
      new RedisStore({ client, clock, functions: false }),
    ];
  }

  /** Takes up to `cost` units off `events` (in the window), newest first; returns the first touched. */
  function takeUnits(events: Event[], cost: number): void {
    for (let i = events.length - 1; i >= 0 && cost > 0; i--) {
      const taken = Math.min(events[i].cost, cost);
      events[i].cost -= taken;
      cost -= taken;
    }
  }

  async function runLog(t: Timeline) {
    let us = t.startUs;
    const clock = () => us / 1000;
    const stores = storesAt(clock);
    const policy = resolvePolicy({ period: t.period, threshold: t.threshold }, 'weighted log');
    const modelPolicy = {
      algorithm: 'sliding-window' as const,
      periodUs: policy.periodUs,
      limit: policy.threshold,
      burst: policy.burst,
    };
    const model = new ReferenceModel();
    const id = randomUUID();
    const keys = stores.map((_, i) => [`wr:{${id}}:${i}`]);
    const allowed: Array<{ at: number; cost: number; answers: RateLimitDecision[] }> = [];
    // Until when a request refunded from the middle of the log is still in the window.
    let gapUntil = -Infinity;

    for (const step of t.steps) {
      const now = toMicros(clock());
      const history = model.history('log');
      const inWindow = history.filter((e) => e.t > now - policy.periodUs && e.cost > 0);
      if (step.op === 'wait') {
        us += step.us;
      } else if (step.op === 'consume') {
        const expected = model.decide(['log'], [modelPolicy], [step.cost], now);
        const answers = await onAll(stores, (s, i) => s.consume(keys[i], [policy], [step.cost]));
        const [want] = expected.answers;
        const got = answers[0];
        expect({ ...view(got), retryAfterMs: 0 }).toEqual({
          allowed: want.allowed,
          remaining: want.remaining,
          resetAfterMs: want.resetAfterMs,
          retryAfterMs: 0,
        });
        const wantRetry = want.retryAfterMs < 0 ? Infinity : want.retryAfterMs;
        if (now >= gapUntil) expect(got.retryAfterMs).toBe(wantRetry);
        else expect(got.retryAfterMs).toBeGreaterThanOrEqual(wantRetry);
        if (expected.allowed) allowed.push({ at: now, cost: step.cost, answers });
      } else if (step.op === 'refundOf' && allowed.length > 0) {
        const of = allowed[step.pick % allowed.length];
        const cost = Math.min(step.part ?? of.cost, of.cost);
        const same = inWindow.filter((e) => e.t === of.at);
        if (same.length > 0 && inWindow[inWindow.length - 1].t !== of.at) {
          gapUntil = Math.max(gapUntil, of.at + policy.periodUs);
        }
        takeUnits(same, cost);
        const answers = await onAll(stores, (s, i) =>
          s.refund!(keys[i], [policy], [cost], of.answers[i]),
        );
        const left = inWindow.reduce((n, e) => n + e.cost, 0);
        expect(answers[0].remaining).toBe(Math.max(policy.threshold - left, 0));
      } else if (step.op === 'refund') {
        takeUnits(inWindow, step.cost);
        const answers = await onAll(stores, (s, i) => s.refund!(keys[i], [policy], [step.cost]));
        const left = inWindow.reduce((n, e) => n + e.cost, 0);
        expect(answers[0].remaining).toBe(Math.max(policy.threshold - left, 0));
      }
    }
  }

  it(`sliding log: ${RUNS} timelines of weighted requests, refunds of a request and refunds of the latest`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb, (t) => runLog(t)),
      { numRuns: RUNS },
    );
  }, 120_000);

  it(`concurrency: ${RUNS} timelines of weighted leases taken, released, renewed and refunded in part`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb, async (t) => {
        let us = t.startUs;
        const clock = () => us / 1000;
        const stores = storesAt(clock);
        const policy = resolvePolicy(
          { algorithm: 'concurrency', period: t.period, threshold: t.threshold },
          'weighted leases',
        );
        const id = randomUUID();
        const keys = stores.map((_, i) => [`wl:{${id}}:${i}`]);
        const held: Array<{ cost: number; answers: RateLimitDecision[] }> = [];
        // What is held, by what a refund of nothing answers (it gives back nothing).
        const free = async () =>
          (await onAll(stores, (s, i) => s.refund!(keys[i], [policy], [0])))[0].remaining;

        for (const [n, step] of t.steps.entries()) {
          if (step.op === 'wait') {
            us += step.us;
          } else if (step.op === 'consume') {
            const answers = await onAll(stores, (s, i) =>
              s.consume(keys[i], [policy], [step.cost]),
            );
            if (answers[0].allowed) held.push({ cost: step.cost, answers });
          } else if (step.op === 'refundOf' && held.length > 0) {
            // Release and renew, in turn.
            const lease = held[step.pick % held.length];
            if (n % 2 === 0) {
              await onAll(stores, (s, i) =>
                s.release!(keys[i], [policy], [lease.cost], lease.answers[i]),
              );
            } else {
              await onAll(stores, (s, i) =>
                s.renew!(keys[i], [policy], [lease.cost], lease.answers[i]),
              );
            }
          } else if (step.op === 'refund') {
            const before = await free();
            const answers = await onAll(stores, (s, i) =>
              s.refund!(keys[i], [policy], [step.cost]),
            );
            // Exactly the cost comes back, never past a full quota.
            expect(answers[0].remaining).toBe(Math.min(before + step.cost, policy.threshold));
          }
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
