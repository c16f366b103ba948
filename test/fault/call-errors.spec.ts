/**
 * Calls that fail for reasons of their own, beside normal traffic, on a real Redis through every
 * client and on the memory store: a dynamic anchor no calendar window can be computed from (the
 * start of `Date`'s range, in a zone behind UTC), a tracker that rejects, a cost that throws, and
 * `RateLimitService` calls with such an anchor. Each fails alone, with an error that names its
 * route (or method) and its field; no breaker opens, no outage is logged, and every normal call is
 * decided by the store, none by the fallback.
 *
 * Before, the anchor passed validation and the calendar code threw inside the store call: it was
 * taken for a failing Redis, three at once opened the breaker, and the normal calls beside them
 * were answered per instance in memory.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  type INestApplication,
  Logger,
  UnauthorizedException,
} from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  RateLimit,
  RateLimitConfigError,
  type RateLimitDecision,
  RateLimitHealthIndicator,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
  RateLimitStore,
} from '../../lib/index.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS } from '../support/stores.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { CapturingLogger } from './traffic.js';

/** The first instant `Date` holds: its wall time in New York is no date at all. */
const BAD_ANCHOR = new Date(-8.64e15);
const SIGNED_UP = new Date('2026-01-31T09:00:00-05:00');
const RANGE = 'a date between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z';
const ROOMY = 1_000_000;

const isBad = (ctx: ExecutionContext): boolean =>
  ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-bad'] === '1';

@Controller()
class BillingController {
  @RateLimit({
    algorithm: 'fixed-window',
    calendar: 'month',
    threshold: ROOMY,
    timeZone: 'America/New_York',
    anchor: (ctx) => (isBad(ctx) ? BAD_ANCHOR : SIGNED_UP),
  })
  @Get('usage')
  usage() {
    return 'ok';
  }

  @RateLimit({
    period: '1h',
    threshold: ROOMY,
    tracker: async (ctx) => {
      if (isBad(ctx)) throw new Error('no customer record');
      return 'customer-1';
    },
  })
  @Get('tracked')
  tracked() {
    return 'ok';
  }

  @RateLimit({
    period: '1h',
    threshold: ROOMY,
    cost: (ctx) => (isBad(ctx) ? undefined : [1])!.length,
  })
  @Get('costly')
  costly() {
    return 'ok';
  }

  // Turns a caller away on purpose, as a guard may.
  @RateLimit({
    period: '1h',
    threshold: ROOMY,
    tracker: (ctx) => {
      if (isBad(ctx)) throw new UnauthorizedException('no API key');
      return 'customer-1';
    },
  })
  @Get('keyed')
  keyed() {
    return 'ok';
  }
}

/**
 * Lets Nest answer as it does by default (500 for an error that is not an HttpException), and
 * keeps those errors.
 */
@Catch()
class RecordingFilter extends BaseExceptionFilter {
  readonly errors: unknown[] = [];
  override catch(exception: unknown, host: ArgumentsHost) {
    if (!(exception instanceof HttpException)) this.errors.push(exception);
    super.catch(exception, host);
  }
}

const ROUTES = ['usage', 'tracked', 'costly'] as const;
const FAILURES: Record<(typeof ROUTES)[number], RegExp> = {
  usage: new RegExp(
    `^@RateLimit on BillingController\\.usage: anchor must be ${RANGE}, got "-271821-04-20T00:00:00\\.000Z"$`,
  ),
  tracked: /^@RateLimit on BillingController\.tracked: tracker threw Error: no customer record$/,
  costly: /^@RateLimit on BillingController\.costly: cost threw TypeError: /,
};

const SERVICE_POLICY: RateLimitPolicy = {
  algorithm: 'fixed-window',
  calendar: 'month',
  threshold: ROOMY,
  timeZone: 'America/New_York',
  anchor: SIGNED_UP,
};
const BAD_SERVICE_POLICY: RateLimitPolicy = { ...SERVICE_POLICY, threshold: 5, anchor: BAD_ANCHOR };

// Enough rounds of three bad calls at once to open the breaker many times over before the fix.
const BAD_ROUNDS = 8;
const NORMAL_WORKERS = 4;
const NORMAL_CALLS = 18;

describe.each(STORE_TARGETS)(
  'calls failing for their own reasons, beside normal calls (%s)',
  (target) => {
    let redis: TestRedis | undefined;
    let app: INestApplication;
    const logger = new CapturingLogger();
    let filter: RecordingFilter;
    const degraded: Array<RateLimitDecision['degraded']> = [];
    // What onStoreError was asked about: store failures only.
    const told: Error[] = [];
    const keyPrefix = `ce${Date.now()}`;

    beforeAll(async () => {
      let client: RedisClient | undefined;
      if (target !== 'memory') {
        redis = await startRedis();
        client = await redis.connect(target);
      }
      Logger.overrideLogger(logger);
      const ref = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({
            ...(client === undefined ? {} : { redis: client }),
            keyPrefix,
            // Generous: a busy machine must not turn a slow reply into a fallback answer here.
            timeout: 1000,
            onDecision: (_ctx, decision) => degraded.push(decision.degraded),
            onStoreError: (error) => {
              told.push(error);
              return 'memory';
            },
          }),
        ],
        controllers: [BillingController],
      }).compile();
      app = ref.createNestApplication({ logger });
      filter = new RecordingFilter(app.getHttpAdapter());
      app.useGlobalFilters(filter);
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
      await redis?.stop();
    });

    /** The store's health as the indicator reports it. */
    const health = async () =>
      (await app.get(RateLimitHealthIndicator).isHealthy('rate-limit'))['rate-limit'];

    it('fails each bad call alone, naming its route and field, and the store decides every other call', async () => {
      const server = app.getHttpServer();
      const limiter = app.get(RateLimitService);
      const badAnswers: number[] = [];
      const serviceErrors: unknown[] = [];
      const normalAnswers: number[] = [];
      const serviceDecisions: RateLimitDecision[] = [];

      const bad = async () => {
        for (let round = 0; round < BAD_ROUNDS; round++) {
          // Three at once, as a burst of one odd customer's requests would come.
          const answers = await Promise.all(
            ROUTES.map((route) => request(server).get(`/${route}`).set('x-bad', '1')),
          );
          badAnswers.push(...answers.map((r) => r.status));
          // Thrown at once or rejected: either way, never decided.
          try {
            await limiter.consume('customer-odd', BAD_SERVICE_POLICY);
            serviceErrors.push('decided');
          } catch (error) {
            serviceErrors.push(error);
          }
        }
      };
      const normal = async (worker: number) => {
        for (let i = 0; i < NORMAL_CALLS; i++) {
          const route = ROUTES[(worker + i) % ROUTES.length];
          normalAnswers.push((await request(server).get(`/${route}`)).status);
          serviceDecisions.push(await limiter.consume(`customer-${worker}`, SERVICE_POLICY));
        }
      };
      await Promise.all([
        bad(),
        bad(),
        ...Array.from({ length: NORMAL_WORKERS }, (_, w) => normal(w)),
      ]);

      // Every other call was decided by the store itself, none by a fallback.
      const normalCalls = NORMAL_WORKERS * NORMAL_CALLS;
      expect(normalAnswers).toEqual(Array(normalCalls).fill(200));
      expect(degraded).toEqual(Array(normalCalls).fill(undefined));
      expect(serviceDecisions.map((d) => [d.allowed, d.degraded])).toEqual(
        Array(normalCalls).fill([true, undefined]),
      );

      // Every bad call failed, as a handler's bug does: a 500, with an error naming route and field.
      expect(badAnswers).toEqual(Array(2 * BAD_ROUNDS * ROUTES.length).fill(500));
      const messages = filter.errors.map((e) => (e instanceof Error ? e.message : String(e)));
      for (const route of ROUTES) {
        expect(messages.filter((m) => FAILURES[route].test(m))).toHaveLength(2 * BAD_ROUNDS);
      }
      expect(messages).toHaveLength(2 * BAD_ROUNDS * ROUTES.length);
      expect(serviceErrors).toHaveLength(2 * BAD_ROUNDS);
      for (const error of serviceErrors) {
        expect(error).toBeInstanceOf(RateLimitConfigError);
        expect((error as Error).message).toBe(
          `RateLimitService.consume: anchor must be ${RANGE}, got "-271821-04-20T00:00:00.000Z"`,
        );
      }

      // No outage: nothing logged, nothing asked of onStoreError, and the store is healthy with
      // its breaker closed.
      expect(logger.warnings).toEqual([]);
      expect(told).toEqual([]);
      expect(await health()).toMatchObject({ status: 'up', degraded: false });
      if (target !== 'memory') expect((await health()).breaker).toBe('closed');
    });

    it('passes an HttpException a function throws on purpose as it is', async () => {
      const before = filter.errors.length;
      const answer = await request(app.getHttpServer()).get('/keyed').set('x-bad', '1');
      expect([answer.status, answer.body.message]).toEqual([401, 'no API key']);
      expect(filter.errors).toHaveLength(before);
      expect((await request(app.getHttpServer()).get('/keyed')).status).toBe(200);
    });

    if (target !== 'memory') {
      it('rejects a decision whose Lua fails on its own arguments, without taking it for a failing Redis', async () => {
        const store = app.get(RateLimitStore);
        const policy = resolvePolicy({ period: '1h', threshold: ROOMY }, 'test');
        // A limit the decision's Lua cannot read: it raises an error for this call alone.
        const unreadable = { ...policy, threshold: 'x' as never };
        const outcomes = await Promise.all(
          Array.from({ length: 24 }, async (_, i) => {
            try {
              return i % 2 === 0
                ? await store.consume([`${keyPrefix}:unreadable`], [unreadable], [1])
                : await store.consume([`${keyPrefix}:beside-${i}`], [policy], [1]);
            } catch (error) {
              return error;
            }
          }),
        );
        for (const error of outcomes.filter((_, i) => i % 2 === 0)) {
          expect((error as Error).message).toMatch(/^(ERR )?user_(function|script):\d+: /);
        }
        const beside = outcomes.filter((_, i) => i % 2 === 1) as RateLimitDecision[];
        expect(beside.map((d) => [d.allowed, d.degraded])).toEqual(
          Array(12).fill([true, undefined]),
        );
        expect(logger.warnings).toEqual([]);
        expect(told).toEqual([]);
        expect(await health()).toMatchObject({ status: 'up', degraded: false, breaker: 'closed' });
      });
    }
  },
);
