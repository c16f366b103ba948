/**
 * RateLimitService.reserve and run with usage through a real Nest module on every store and
 * client: concurrent reservations settle to exactly what was used, a debt holds the next call
 * back, and a ticket settles once.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import fc from 'fast-check';
import {
  RateLimitException,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../../lib/index.js';
import { STORE_TARGETS, useRedis } from '../../support/stores.js';
import { uniquePrefix, uniqueUser } from '../http/fixtures/app.js';

const BUDGETS: Record<string, RateLimitPolicy> = {
  'fixed window': { algorithm: 'fixed-window', period: '1h', threshold: 1000 },
  'sliding counter': { algorithm: 'sliding-window-counter', period: '1h', threshold: 1000 },
  'sliding log': { algorithm: 'sliding-window', period: '1h', threshold: 1000 },
  // A refill of one token an hour: none during the test.
  'token bucket': { algorithm: 'token-bucket', period: '1000h', threshold: 1000 },
  'leaky bucket': { algorithm: 'leaky-bucket', period: '1000h', threshold: 1000 },
  'calendar day': { algorithm: 'fixed-window', calendar: 'day', threshold: 1000 },
};

describe.each(STORE_TARGETS)('reservations through RateLimitService on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function service(): Promise<RateLimitService> {
    const client = target === 'memory' ? undefined : await redis().connect(target);
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          ...(client === undefined ? {} : { redis: client }),
          // Exact sums are what these count: a settle that a busy machine slowed past the default
          // 100 ms would go to the per-instance fallback and leave its estimate charged in Redis.
          timeout: 2000,
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  it.each(Object.keys(BUDGETS))(
    '%s: 50 concurrent reservations of 20, each settled at a random actual, leave exactly the sum of the actuals used',
    async (budget) => {
      const limiter = await service();
      const policy = BUDGETS[budget];
      const actuals = fc.sample(fc.integer({ min: 0, max: 38 }), { numRuns: 50, seed: 26 });
      const key = `tokens:${uniqueUser()}`;
      const tickets = await Promise.all(actuals.map(() => limiter.reserve(key, policy, 20)));
      expect(tickets.every((t) => t.allowed)).toBe(true);
      await Promise.all(tickets.map((t, i) => t.settle(actuals[i])));
      const used = actuals.reduce((a, b) => a + b, 0);
      expect(used).toBeLessThan(1000);
      // What a call of 1 would leave: the budget less everything used, less itself. A bucket
      // gives back no more than it would hold had a reservation never been made, which on
      // Redis's own clock may be short of a whole one by what refilled between the reservations
      // (well under a token here): one fewer whole request at most.
      const { remaining } = await limiter.peek(key, policy);
      if (policy.algorithm === 'token-bucket' || policy.algorithm === 'leaky-bucket') {
        expect(remaining).toBeLessThanOrEqual(1000 - used - 1);
        expect(remaining).toBeGreaterThanOrEqual(1000 - used - 2);
      } else {
        expect(remaining).toBe(1000 - used - 1);
      }
    },
  );

  it('settles several policies at once, and run() settles what its result says it used', async () => {
    const limiter = await service();
    const policies = [BUDGETS['calendar day'], { ...BUDGETS['token bucket'], name: 'bucket' }];
    const key = `tokens:${uniqueUser()}`;
    const ticket = await limiter.reserve(key, policies, 300);
    expect(ticket.policies.map((p) => p.remaining)).toEqual([700, 700]);
    const after = await ticket.settle(120);
    expect(after.policies.map((p) => p.remaining)).toEqual([880, 880]);
    const reply = await limiter.run(key, policies, () => Promise.resolve({ tokens: 80 }), {
      cost: 500,
      maxWait: 0,
      usage: (r) => r.tokens,
    });
    expect(reply).toEqual({ tokens: 80 });
    expect((await limiter.peek(key, policies)).policies.map((p) => p.remaining)).toEqual([
      799, 799,
    ]);
  });

  it('cancel gives the whole estimate back; a ticket never settled keeps it', async () => {
    const limiter = await service();
    const policy = BUDGETS['fixed window'];
    const key = `tokens:${uniqueUser()}`;
    const kept = await limiter.reserve(key, policy, 100);
    const cancelled = await limiter.reserve(key, policy, 200);
    expect((await cancelled.cancel()).remaining).toBe(900);
    expect(kept.remaining).toBe(900);
    expect((await limiter.peek(key, policy)).remaining).toBe(899);
  });

  it.each(['fixed window', 'token bucket', 'leaky bucket', 'sliding log', 'sliding counter'])(
    '%s: usage above the estimate is charged past the limit, and the next reservation is refused until it is paid',
    async (budget) => {
      const limiter = await service();
      const policy = { ...BUDGETS[budget], threshold: 50 };
      const key = `tokens:${uniqueUser()}`;
      const ticket = await limiter.reserve(key, policy, 10);
      const settled = await ticket.settle(60);
      expect(settled).toMatchObject({ allowed: false, remaining: 0 });
      expect(settled.retryAfterMs).toBeGreaterThan(0);
      const refused = await limiter.reserve(key, policy, 1).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(RateLimitException);
      expect((refused as RateLimitException).retryAfterMs).toBeGreaterThan(0);
    },
  );
});
