/**
 * Random timelines of concurrency leases (taken, freed, renewed, left to expire) run through a
 * plain model, the memory store and the Redis store in lockstep, under a simulated clock. Every
 * answer must be identical in all three.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MemoryStore, type RateLimitDecision, RedisStore } from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { toMicros } from '../../lib/stores/clock.js';
import { useRedis } from '../support/stores.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 100);
const ms = (us: number) => Math.ceil(us / 1000);

/** The definition: a lease counts its cost until it expires, a period after it was taken or renewed. */
class LeaseModel {
  private readonly leases = new Map<number, { cost: number; expiresUs: number }>();
  private next = 0;
  constructor(
    private readonly limit: number,
    private readonly periodUs: number,
  ) {}

  acquire(cost: number, now: number) {
    for (const [id, l] of this.leases) if (l.expiresUs <= now) this.leases.delete(id);
    const held = [...this.leases.values()].reduce((sum, l) => sum + l.cost, 0);
    if (cost > this.limit)
      return { answer: [false, Math.max(this.limit - held, 0), -1], id: undefined };
    if (held + cost > this.limit) {
      const last = Math.max(0, ...[...this.leases.values()].map((l) => l.expiresUs));
      const reset = held === 0 ? 0 : ms(last - now);
      return { answer: [false, Math.max(this.limit - held, 0), 1000, reset], id: undefined };
    }
    const id = this.next++;
    this.leases.set(id, { cost, expiresUs: now + this.periodUs });
    return { answer: [true, this.limit - held - cost, 0, ms(this.periodUs)], id };
  }

  release(id: number): void {
    this.leases.delete(id);
  }

  renew(id: number, now: number): boolean {
    const lease = this.leases.get(id);
    if (lease === undefined || lease.expiresUs <= now) return false;
    lease.expiresUs = now + this.periodUs;
    return true;
  }
}

const stepArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('acquire' as const),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('renew' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('wait' as const),
      us: fc.integer({ min: 0, max: 1_500_000 }),
    }),
  },
);

const timelineArb = fc.record({
  threshold: fc.integer({ min: 1, max: 5 }),
  period: fc.constantFrom('250ms', '1s', '1500ms'),
  startUs: fc.integer({ min: 1_700_000_000_000_000, max: 1_700_000_100_000_000 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 40 }),
});

describe('concurrency leases: model, memory and Redis agree', () => {
  const redis = useRedis('redis');

  it(`${RUNS} timelines of taking, freeing, renewing and expiring leases`, async () => {
    await fc.assert(
      fc.asyncProperty(timelineArb, async (t) => {
        let us = t.startUs;
        const clock = () => us / 1000;
        const memory = new MemoryStore({ clock });
        const shared = new RedisStore({ client: redis().shared, clock });
        const policy = resolvePolicy(
          { algorithm: 'concurrency', threshold: t.threshold, period: t.period },
          'leases',
        );
        const model = new LeaseModel(policy.threshold, policy.periodUs);
        const key = [`leases:{${randomUUID()}}`];
        const held: Array<{
          id: number;
          cost: number;
          m: RateLimitDecision;
          r: RateLimitDecision;
        }> = [];
        const view = (d: RateLimitDecision) => [
          d.allowed,
          d.remaining,
          d.retryAfterMs === Infinity ? -1 : d.retryAfterMs,
          ...(d.retryAfterMs === Infinity ? [] : [d.resetAfterMs]),
        ];
        for (const step of t.steps) {
          const now = toMicros(clock());
          if (step.op === 'wait') {
            us += step.us;
          } else if (step.op === 'acquire') {
            const expected = model.acquire(step.cost, now);
            const m = await memory.consume(key, [policy], [step.cost]);
            const r = await shared.consume(key, [policy], [step.cost]);
            expect(view(m)).toEqual(expected.answer.slice(0, view(m).length));
            expect(view(r)).toEqual(view(m));
            if (expected.id !== undefined) held.push({ id: expected.id, cost: step.cost, m, r });
          } else if (held.length > 0) {
            const lease = held[step.pick % held.length];
            if (step.op === 'release') {
              model.release(lease.id);
              held.splice(held.indexOf(lease), 1);
              await memory.release(key, [policy], [lease.cost], lease.m);
              await shared.release(key, [policy], [lease.cost], lease.r);
            } else {
              const expected = model.renew(lease.id, now);
              expect((await memory.renew(key, [policy], [lease.cost], lease.m)).allowed).toBe(
                expected,
              );
              expect((await shared.renew(key, [policy], [lease.cost], lease.r)).allowed).toBe(
                expected,
              );
            }
          }
        }
      }),
      { numRuns: RUNS },
    );
  }, 120_000);
});
