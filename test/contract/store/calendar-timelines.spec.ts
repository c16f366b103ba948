/**
 * Random timelines on windows by the calendar: irregular window lengths (scaled days of 23 to 25
 * hours and months of 28 to 31 days, and any length from 1 s to 6 s), one or two policies of the
 * fixed window and the sliding counter, under a simulated clock. The reference model, the memory
 * store and the Redis store (Functions and scripts) must answer every consume alike; with peeks,
 * refunds and resets between them, the stores must still answer alike. And windows that move under
 * a key (an anchor that changes between decisions, back and forth): the model, which places each
 * unit by the last moment it can have been spent, and the stores still answer every consume alike.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  MemoryStore,
  type RateLimitDecision,
  type RateLimitStore,
  RedisStore,
} from '../../../lib/index.js';
import { toMicros } from '../../../lib/stores/clock.js';
import { type ModelPolicy, ReferenceModel } from '../../model/reference.js';
import { calendarPolicy, startsFrom, windowsAt } from '../../support/calendar-windows.js';
import { useRedis } from '../../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const MAX_GAP_US = 12_000_000;
const MAX_STEPS = 40;

// A tenth of a second for an hour: days of 23, 24 and 25 "hours", months of 28 to 31 "days" of 0.1 s.
const lengthArb = fc.oneof(
  fc.constantFrom(2_300_000, 2_400_000, 2_500_000, 2_800_000, 2_900_000, 3_000_000, 3_100_000),
  // Any length, to the microsecond; at least a second, as calendar windows are (see fixed-window.lua).
  fc.integer({ min: 1_000_000, max: 6_000_000 }),
);

const policyArb = fc.record({
  algorithm: fc.constantFrom('fixed-window' as const, 'sliding-window-counter' as const),
  threshold: fc.integer({ min: 1, max: 6 }),
  // Repeated for as long as the timeline lasts.
  pattern: fc.array(lengthArb, { minLength: 1, maxLength: 6 }),
  // Where the timeline starts in the first window.
  offsetUs: fc.integer({ min: 0, max: 6_000_000 }),
});

const gapArb = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 400_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 4_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_GAP_US }) },
);

const costArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(1) },
  { weight: 2, arbitrary: fc.integer({ min: 2, max: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: 5, max: 7 }) },
);

const opArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant('consume' as const) },
  { weight: 1, arbitrary: fc.constant('peek' as const) },
  { weight: 1, arbitrary: fc.constant('refund' as const) },
  { weight: 2, arbitrary: fc.constant('refundOf' as const) },
  { weight: 1, arbitrary: fc.constant('reset' as const) },
);

const timelineArb = <Op>(op: fc.Arbitrary<Op>) =>
  fc.record({
    policies: fc.array(policyArb, { minLength: 1, maxLength: 2 }),
    startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
    steps: fc.array(
      fc.record({ gapUs: gapArb, client: fc.integer({ min: 0, max: 1 }), cost: costArb, op }),
      { minLength: 1, maxLength: MAX_STEPS },
    ),
  });

// Anchors: windows of whole seconds (as a calendar's start on whole ms, far apart), from
// anywhere near the timeline's start, so that two anchors' windows overlap every which way.
const anchorArb = fc.record({
  pattern: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 4 }),
  offset: fc.integer({ min: 0, max: 6 }),
});

const anchoredTimelineArb = fc.record({
  policies: fc.array(
    fc.record({
      algorithm: policyArb.map((p) => p.algorithm),
      threshold: fc.integer({ min: 1, max: 6 }),
      anchors: fc.array(anchorArb, { minLength: 2, maxLength: 3 }),
    }),
    { minLength: 1, maxLength: 2 },
  ),
  startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
  steps: fc.array(
    fc.record({
      gapUs: gapArb,
      client: fc.integer({ min: 0, max: 1 }),
      cost: costArb,
      // Mostly the first anchor, at times another: back and forth.
      anchor: fc.oneof(
        { weight: 3, arbitrary: fc.constant(0) },
        { weight: 2, arbitrary: fc.integer({ min: 0, max: 5 }) },
      ),
    }),
    { minLength: 1, maxLength: MAX_STEPS },
  ),
});

/** An anchor's window starts, on whole seconds, from well before the timeline to past its end. */
function wholeSecondStarts(a: { pattern: number[]; offset: number }, startUs: number): number[] {
  const endUs = startUs + MAX_STEPS * MAX_GAP_US;
  const first = (Math.floor(startUs / 1_000_000) - a.offset - 12) * 1_000_000;
  const lengths: number[] = [];
  for (let at = first, i = 0; at <= endUs + 18_000_000; i++) {
    lengths.push(a.pattern[i % a.pattern.length] * 1_000_000);
    at += lengths[i];
  }
  return startsFrom(first, lengths);
}

type PolicySpec = typeof policyArb extends fc.Arbitrary<infer T> ? T : never;

interface Timeline {
  policies: PolicySpec[];
  startUs: number;
  steps: { gapUs: number; client: number; cost: number; op: string }[];
}

/** Window starts from two windows before the timeline to two past its longest possible end. */
function startsFor(p: PolicySpec, startUs: number): number[] {
  const endUs = startUs + MAX_STEPS * MAX_GAP_US;
  const first = startUs - (p.offsetUs % p.pattern[0]) - 2 * 6_000_000;
  const lengths: number[] = [];
  for (let at = first, i = 0; at <= endUs + 3 * 6_000_000; i++) {
    lengths.push(p.pattern[i % p.pattern.length]);
    at += lengths[i];
  }
  return startsFrom(first, lengths);
}

const view = (d: RateLimitDecision) => ({
  allowed: d.allowed,
  policies: d.policies.map(({ allowed, remaining, retryAfterMs, resetAfterMs }) => ({
    allowed,
    remaining,
    retryAfterMs,
    resetAfterMs,
  })),
});

describe('calendar timelines: model, memory store and Redis store agree', () => {
  const redis = useRedis('redis');

  function setup(t: Timeline) {
    const starts = t.policies.map((p) => startsFor(p, t.startUs));
    const policies = t.policies.map((p, i) =>
      calendarPolicy(
        p.algorithm,
        p.threshold,
        windowsAt(starts[i]),
        Math.max(...p.pattern),
        `p${i}`,
      ),
    );
    const clock = { us: t.startUs };
    const now = () => clock.us / 1000;
    const client = redis().shared;
    const stores: RateLimitStore[] = [
      new MemoryStore({ clock: now }),
      new RedisStore({ client, clock: now }),
      new RedisStore({ client, clock: now, functions: false }),
    ];
    const prefix = randomUUID();
    const keysOf = (store: number, c: number) =>
      policies.map((p) => `ct:{${prefix}|${c}}:${store}:${p.id}`);
    return { starts, policies, clock, stores, keysOf };
  }

  it(`${RUNS} timelines of consumes: every decision as the model's`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb(fc.constant('consume' as const)), async (t) => {
        const { starts, policies, clock, stores, keysOf } = setup(t);
        await (stores[1] as RedisStore).warmUp();
        const model = new ReferenceModel();
        const modelPolicies = policies.map((p, i) => ({
          algorithm: p.algorithm as 'fixed-window',
          periodUs: p.periodUs,
          limit: p.threshold,
          burst: p.burst,
          starts: starts[i],
        }));
        for (const [index, step] of t.steps.entries()) {
          clock.us += step.gapUs;
          const costs = policies.map(() => step.cost);
          const modelKeys = keysOf(-1, step.client);
          const expected = model.decide(modelKeys, modelPolicies, costs, toMicros(clock.us / 1000));
          const want = {
            allowed: expected.allowed,
            policies: expected.answers.map((a) => ({
              ...a,
              retryAfterMs: a.retryAfterMs < 0 ? Infinity : a.retryAfterMs,
            })),
          };
          for (const [s, store] of stores.entries()) {
            const got = await store.consume(keysOf(s, step.client), policies, costs);
            expect({ step: index, store: s, ...view(got) }).toEqual({
              step: index,
              store: s,
              ...want,
            });
          }
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);

  it(`${RUNS} timelines of consumes, peeks, refunds and resets: every store answers alike`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb(opArb), async (t) => {
        const { policies, clock, stores, keysOf } = setup(t);
        const allowed: RateLimitDecision[][] = [];
        for (const [index, step] of t.steps.entries()) {
          clock.us += step.gapUs;
          const costs = policies.map(() => step.cost);
          const answers: RateLimitDecision[] = [];
          for (const [s, store] of stores.entries()) {
            const keys = keysOf(s, step.client);
            const of = allowed[index % Math.max(allowed.length, 1)]?.[s];
            if (step.op === 'consume') answers.push(await store.consume(keys, policies, costs));
            else if (step.op === 'peek') answers.push(await store.peek!(keys, policies, costs));
            else if (step.op === 'refund') answers.push(await store.refund!(keys, policies, costs));
            else if (step.op === 'reset') answers.push(await store.reset!(keys, policies, costs));
            else answers.push(await store.refund!(keys, policies, costs, of));
          }
          for (const answer of answers.slice(1)) {
            expect({ step: index, ...view(answer) }).toEqual({ step: index, ...view(answers[0]) });
          }
          if (step.op === 'consume' && answers[0].allowed) allowed.push(answers);
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
  it(`${RUNS} timelines of consumes under anchors that move: every decision as the model's`, async () => {
    await fc.assert(
      fc.asyncProperty(anchoredTimelineArb, async (t) => {
        // Per policy, per anchor: its windows, and the policy under them (one name, one key).
        const starts = t.policies.map((p) => p.anchors.map((a) => wholeSecondStarts(a, t.startUs)));
        const policies = t.policies.map((p, i) => {
          const longestUs = Math.max(...p.anchors.flatMap((a) => a.pattern)) * 1_000_000;
          return starts[i].map((s) =>
            calendarPolicy(p.algorithm, p.threshold, windowsAt(s), longestUs, `p${i}`),
          );
        });
        const clock = { us: t.startUs };
        const now = () => clock.us / 1000;
        const client = redis().shared;
        const stores: RateLimitStore[] = [
          new MemoryStore({ clock: now }),
          new RedisStore({ client, clock: now }),
          new RedisStore({ client, clock: now, functions: false }),
        ];
        await (stores[1] as RedisStore).warmUp();
        const prefix = randomUUID();
        const model = new ReferenceModel();
        for (const [index, step] of t.steps.entries()) {
          clock.us += step.gapUs;
          const chosen = t.policies.map((p) => step.anchor % p.anchors.length);
          const inForce = policies.map((variants, i) => variants[chosen[i]]);
          const modelPolicies: ModelPolicy[] = inForce.map((p, i) => ({
            algorithm: p.algorithm as 'fixed-window',
            periodUs: p.periodUs,
            limit: p.threshold,
            burst: p.burst,
            starts: starts[i][chosen[i]],
          }));
          const keysOf = (s: number) =>
            inForce.map((p) => `cm:{${prefix}|${step.client}}:${s}:${p.id}`);
          const costs = inForce.map(() => step.cost);
          const expected = model.decide(keysOf(-1), modelPolicies, costs, toMicros(now()));
          const want = {
            allowed: expected.allowed,
            policies: expected.answers.map((a) => ({
              ...a,
              retryAfterMs: a.retryAfterMs < 0 ? Infinity : a.retryAfterMs,
            })),
          };
          for (const [s, store] of stores.entries()) {
            const got = await store.consume(keysOf(s), inForce, costs);
            expect({ step: index, store: s, ...view(got) }).toEqual({
              step: index,
              store: s,
              ...want,
            });
          }
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
