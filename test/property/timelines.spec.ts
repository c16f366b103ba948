/**
 * Random timelines (arrival gaps, costs, one to three policies, two clients) run through the
 * reference model, the memory store and the Redis store in lockstep, under a simulated clock.
 * Every decision of every policy must be identical in all three.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import { type Redis } from 'ioredis';
import { type RateAlgorithm as Algorithm } from '../../lib/algorithms/algorithm.js';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import { MemoryStore, type PolicyDecision, RedisStore } from '../../lib/index.js';
import { resolvePolicy, type ResolvedPolicy } from '../../lib/policy/rate-limit.policy.js';
import { toMicros } from '../../lib/stores/clock.js';
import { type Event, ReferenceModel } from '../model/reference.js';
import { useRedis } from '../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);
// A few seconds per property on a quiet machine, and each timeline waits on Redis in turn: on a
// busy one, a property has needed more than the 30 s every other test gets.
jest.setTimeout(180_000);
const BUCKETS = new Set<Algorithm>(['token-bucket', 'leaky-bucket']);

const policyArb = (algorithm: fc.Arbitrary<Algorithm>) =>
  fc
    .record({
      algorithm,
      period: fc.constantFrom('250ms', '1s', '1500ms', '3s', '10s', '1m'),
      threshold: fc.integer({ min: 1, max: 6 }),
      burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    })
    .map(({ burst, ...p }) =>
      BUCKETS.has(p.algorithm) && burst !== undefined ? { ...p, burst } : p,
    );

const stepArb = fc.record({
  // Mostly bursts within a window, sometimes pauses longer than one.
  gapUs: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 400_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 4_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 12_000_000 }) },
  ),
  client: fc.integer({ min: 0, max: 1 }),
  cost: fc.oneof(
    { weight: 6, arbitrary: fc.constant(1) },
    { weight: 2, arbitrary: fc.integer({ min: 2, max: 4 }) },
    { weight: 1, arbitrary: fc.integer({ min: 5, max: 9 }) },
  ),
});

const timelineArb = (algorithm: fc.Arbitrary<Algorithm>, maxPolicies: number) =>
  fc.record({
    policies: fc.array(policyArb(algorithm), { minLength: 1, maxLength: maxPolicies }),
    // Anywhere in a window, to any microsecond: window alignment must not matter.
    startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
    steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }),
  });

type Timeline = ReturnType<typeof timelineArb> extends fc.Arbitrary<infer T> ? T : never;

interface Recorded {
  policy: ResolvedPolicy;
  allowed: Event[];
}

describe('timelines: model, memory store and Redis store agree on every decision', () => {
  const redis = useRedis('redis');
  let client: Redis | undefined;

  async function run(timeline: Timeline, record?: Map<string, Recorded>) {
    const policies = timeline.policies.map((p, i) =>
      resolvePolicy({ ...p, name: `p${i}` }, 'timeline'),
    );
    const modelPolicies = policies.map((p, i) => ({
      algorithm: timeline.policies[i].algorithm,
      periodUs: p.periodUs,
      limit: p.threshold,
      burst: p.burst,
    }));
    let us = timeline.startUs;
    const clock = () => us / 1000;
    const memory = new MemoryStore({ clock });
    // One connection for every timeline; a store per timeline only binds the simulated clock.
    client ??= redis().shared;
    const shared = new RedisStore({ client, clock });
    await shared.warmUp();
    // The same decisions as scripts, as on a server without Functions.
    const scripted = new RedisStore({ client, clock, functions: false });
    const model = new ReferenceModel();
    const prefix = randomUUID();

    for (const [index, step] of timeline.steps.entries()) {
      us += step.gapUs;
      const now = toMicros(clock());
      const keys = policies.map((p) => `tl:{${prefix}|${step.client}}:${p.id}`);
      const costs = policies.map(() => step.cost);
      const expected = model.decide(keys, modelPolicies, costs, now);
      const fromMemory = await memory.consume(keys, policies, costs);
      const fromRedis = await shared.consume(keys, policies, costs);
      const scriptKeys = policies.map((p) => `tl:{${prefix}|${step.client}}:scripts:${p.id}`);
      const fromScripts = await scripted.consume(scriptKeys, policies, costs);
      const view = (d: { allowed: boolean; policies: readonly PolicyDecision[] }) => ({
        step: index,
        allowed: d.allowed,
        policies: d.policies.map(({ allowed, remaining, retryAfterMs, resetAfterMs }) => ({
          allowed,
          remaining,
          retryAfterMs,
          resetAfterMs,
        })),
      });
      const want = {
        step: index,
        allowed: expected.allowed,
        policies: expected.answers.map((a) => ({
          ...a,
          retryAfterMs: a.retryAfterMs < 0 ? Infinity : a.retryAfterMs,
        })),
      };
      expect(view(fromMemory)).toEqual(want);
      expect(view(fromRedis)).toEqual(want);
      expect(view(fromScripts)).toEqual(want);
      if (record && expected.allowed) {
        keys.forEach((key, i) => {
          const entry = record.get(key) ?? { policy: policies[i], allowed: [] };
          entry.allowed.push({ t: now, cost: step.cost });
          record.set(key, entry);
        });
      }
    }
  }

  it.each(RATE_ALGORITHMS)(`%s: ${RUNS} timelines of one policy`, async (algorithm) => {
    await fc.assert(
      fc.asyncProperty(timelineArb(fc.constant(algorithm), 1), (t) => run(t)),
      {
        numRuns: RUNS,
      },
    );
  });

  it(`mixed algorithms: ${RUNS} timelines of two or three policies on one route, all or nothing`, async () => {
    const mixed = timelineArb(fc.constantFrom(...RATE_ALGORITHMS), 3).filter(
      (t) => t.policies.length >= 2,
    );
    await fc.assert(
      fc.asyncProperty(mixed, (t) => run(t)),
      { numRuns: RUNS },
    );
  });

  it(`sliding log: no span of one period ever holds more than the threshold (${RUNS} timelines)`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb(fc.constant<Algorithm>('sliding-window'), 1), async (t) => {
        const record = new Map<string, Recorded>();
        await run(t, record);
        for (const { policy, allowed } of record.values()) {
          for (const last of allowed) {
            const inSpan = allowed.filter((e) => e.t > last.t - policy.periodUs && e.t <= last.t);
            expect(inSpan.reduce((n, e) => n + e.cost, 0)).toBeLessThanOrEqual(policy.threshold);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it(`token bucket: allowed cost over any span t is at most capacity + rate * t (${RUNS} timelines)`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb(fc.constant<Algorithm>('token-bucket'), 1), async (t) => {
        const record = new Map<string, Recorded>();
        await run(t, record);
        for (const { policy, allowed } of record.values()) {
          const rate = policy.threshold / policy.periodUs;
          for (let i = 0; i < allowed.length; i++) {
            let total = 0;
            for (let j = i; j < allowed.length; j++) {
              total += allowed[j].cost;
              const span = allowed[j].t - allowed[i].t;
              // A hair of slack for the float refill; a real overrun would be a whole request.
              expect(total).toBeLessThanOrEqual(policy.burst + rate * span + 1e-6);
            }
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});
