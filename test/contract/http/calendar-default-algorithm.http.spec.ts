/**
 * `@RateLimit({ calendar: 'day', threshold: 3 })`, which names no algorithm, over HTTP through a
 * real Nest app on both stores and both adapters, under a test clock: three requests a day, then
 * a 429 whose `Retry-After` is the time to the next local midnight, and a fresh quota from then.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitModule } from '../../../lib/index.js';
import { TestClock, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { STORES_AND_ADAPTERS, uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { limitsOf, policiesOf, retryAfter } from './fixtures/policy-app.js';

const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;

/** Defined when a test runs, so that a policy refused at definition fails that test alone. */
function quotaController() {
  @Controller('quota')
  class QuotaController {
    @RateLimit({ calendar: 'day', threshold: 3 })
    @Get('utc')
    utc() {
      return 'ok';
    }

    @RateLimit({ calendar: 'day', timeZone: 'America/New_York', threshold: 3 })
    @Get('new-york')
    newYork() {
      return 'ok';
    }
  }
  return QuotaController;
}

describe.each(STORES_AND_ADAPTERS)(
  'a calendar quota that names no algorithm, on the %s store over %s',
  (kind, adapter) => {
    const redis = useRedis(kind);

    async function setup(at: string) {
      const clock = new TestClock(Date.parse(at));
      const keyPrefix = uniquePrefix();
      const app: INestApplication = await startHttpApp(
        {
          imports: [
            RateLimitModule.forRoot({
              keyPrefix,
              clock: clock.now,
              ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
            }),
          ],
          controllers: [quotaController()],
        },
        { adapter },
      );
      const user = uniqueUser();
      const get = (path: string) => request(app.getHttpServer()).get(path).set(USER_HEADER, user);
      return { app, clock, get, keyPrefix };
    }

    async function threeThen429(get: (path: string) => request.Test, path: string) {
      const passed = [];
      for (let i = 0; i < 3; i++) passed.push(await get(path));
      expect(passed.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(policiesOf(passed[0])).toEqual([{ name: '3-per-day', q: 3, w: DAY_S }]);
      return get(path);
    }

    it('200 three times, then 429 until midnight UTC, then a fresh day', async () => {
      // 15:30 UTC: 8 h 30 min to midnight.
      const { app, clock, get, keyPrefix } = await setup('2026-06-10T15:30:00Z');
      try {
        const rejected = await threeThen429(get, '/quota/utc');
        expect(rejected.status).toBe(429);
        expect(retryAfter(rejected)).toBe(8.5 * HOUR_S);
        expect(limitsOf(rejected)).toEqual([{ name: '3-per-day', r: 0, t: 8.5 * HOUR_S }]);
        if (kind === 'redis') {
          // Counted by the fixed window: its code is in the key.
          const keys = await redis().shared.keys(`${keyPrefix}:*`);
          // Beside it, the ids of the calls, which the store keeps to tell a retried call from a new one.
          const counts = keys.filter((k) => k.endsWith(':3-per-day'));
          expect(counts).toEqual([expect.stringMatching(/:0:fw:3-per-day$/)]);
        }

        clock.ms = Date.parse('2026-06-11T00:00:00Z');
        const next = await get('/quota/utc');
        expect(next.status).toBe(200);
        expect(limitsOf(next)).toEqual([{ name: '3-per-day', r: 2, t: DAY_S }]);
      } finally {
        await app.close();
      }
    });

    it("in the route's time zone, until its own midnight", async () => {
      // 11:30 in New York (EDT, UTC-4): 12 h 30 min to its midnight, 04:00 UTC.
      const { app, clock, get } = await setup('2026-06-10T15:30:00Z');
      try {
        const rejected = await threeThen429(get, '/quota/new-york');
        expect(rejected.status).toBe(429);
        expect(retryAfter(rejected)).toBe(12.5 * HOUR_S);

        clock.ms = Date.parse('2026-06-11T03:59:00Z');
        expect((await get('/quota/new-york')).status).toBe(429);
        clock.ms = Date.parse('2026-06-11T04:00:00Z');
        expect((await get('/quota/new-york')).status).toBe(200);
      } finally {
        await app.close();
      }
    });
  },
);
