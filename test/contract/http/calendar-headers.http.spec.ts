/**
 * The rate-limit headers of quotas by the calendar, over HTTP through a real Nest app on both
 * stores, under a test clock: `w` is the length of the window the decision was made in (Berlin's
 * day of 23 hours says 82800, of 25 hours 90000), `t` and `Retry-After` its real end.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitModule } from '../../../lib/index.js';
import { STORE_KINDS, TestClock, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { limitsOf, policiesOf, retryAfter } from './fixtures/policy-app.js';

const HOUR_S = 3600;
const DAY_S = 24 * HOUR_S;
const BERLIN = { calendar: 'day', timeZone: 'Europe/Berlin' } as const;

type Anchored = Record<'x-anchor', string>;

@Controller('calendar')
class CalendarController {
  @RateLimit({ ...BERLIN, algorithm: 'fixed-window', threshold: 2, name: 'daily' })
  @Get('day')
  day() {
    return 'ok';
  }

  @RateLimit([
    { ...BERLIN, algorithm: 'sliding-window-counter', threshold: 5, name: 'daily' },
    { period: '1m', threshold: 100, name: 'minute' },
  ])
  @Get('pair')
  pair() {
    return 'ok';
  }

  // Each customer's month starts on the day they signed up, which the request says.
  @RateLimit({
    algorithm: 'fixed-window',
    calendar: 'month',
    threshold: 3,
    name: 'monthly',
    anchor: (ctx) => ctx.switchToHttp().getRequest<{ headers: Anchored }>().headers['x-anchor'],
  })
  @Get('billing')
  billing() {
    return 'ok';
  }
}

describe.each(STORE_KINDS)('calendar headers on the %s store', (kind) => {
  const redis = useRedis(kind);

  async function setup(at: string) {
    const clock = new TestClock(Date.parse(at));
    const app: INestApplication = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          clock: clock.now,
          ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
        }),
      ],
      controllers: [CalendarController],
    });
    const user = uniqueUser();
    const get = (path: string, headers: Record<string, string> = {}) =>
      request(app.getHttpServer()).get(path).set(USER_HEADER, user).set(headers);
    return { app, clock, get };
  }

  it('a day of 23 hours says w=82800 and resets at its end; one of 25 says w=90000', async () => {
    // 10:00 CEST on the day clocks go forward: 14 hours to midnight.
    const { app, clock, get } = await setup('2026-03-29T08:00:00Z');
    try {
      const first = await get('/calendar/day');
      expect(first.status).toBe(200);
      expect(policiesOf(first)).toEqual([{ name: 'daily', q: 2, w: 23 * HOUR_S }]);
      expect(limitsOf(first)).toEqual([{ name: 'daily', r: 1, t: 14 * HOUR_S }]);
      await get('/calendar/day');
      for (let i = 0; i < 2; i++) {
        // The second rejection may be the block cache's replay: the same window still.
        const rejected = await get('/calendar/day');
        expect(rejected.status).toBe(429);
        expect(retryAfter(rejected)).toBe(14 * HOUR_S);
        expect(policiesOf(rejected)).toEqual([{ name: 'daily', q: 2, w: 23 * HOUR_S }]);
      }

      // 05:00 CEST on the day clocks go back, 25 hours long: 20 hours left.
      clock.ms = Date.parse('2026-10-25T03:00:00Z');
      const autumn = await get('/calendar/day');
      expect(autumn.status).toBe(200);
      expect(policiesOf(autumn)).toEqual([{ name: 'daily', q: 2, w: 25 * HOUR_S }]);
      expect(limitsOf(autumn)).toEqual([{ name: 'daily', r: 1, t: 20 * HOUR_S }]);
    } finally {
      await app.close();
    }
  });

  it('beside a policy of fixed period, each says its own window', async () => {
    const { app, clock, get } = await setup('2026-10-25T03:00:00Z');
    try {
      expect(policiesOf(await get('/calendar/pair'))).toEqual([
        { name: 'daily', q: 5, w: 25 * HOUR_S },
        { name: 'minute', q: 100, w: 60 },
      ]);
      // October 26 began at 23:00Z.
      clock.ms = Date.parse('2026-10-26T00:00:00Z');
      expect(policiesOf(await get('/calendar/pair'))).toEqual([
        { name: 'daily', q: 5, w: DAY_S },
        { name: 'minute', q: 100, w: 60 },
      ]);
    } finally {
      await app.close();
    }
  });

  it("a month anchored per request says the length of that customer's month", async () => {
    const { app, get } = await setup('2028-02-10T12:00:00Z');
    try {
      // From January 31 to February 29 (a leap year's last day, for the 31st), and from
      // January 15 to February 15.
      const late = await get('/calendar/billing', { 'x-anchor': '2028-01-31T09:00:00Z' });
      expect(policiesOf(late)).toEqual([{ name: 'monthly', q: 3, w: 29 * DAY_S }]);
      const mid = await get('/calendar/billing', {
        'x-anchor': '2027-12-15T00:00:00Z',
        [USER_HEADER]: uniqueUser(),
      });
      expect(policiesOf(mid)).toEqual([{ name: 'monthly', q: 3, w: 31 * DAY_S }]);
      expect(limitsOf(mid)).toEqual([{ name: 'monthly', r: 2, t: 4 * DAY_S + 12 * HOUR_S }]);
    } finally {
      await app.close();
    }
  });

  it("a customer's billing day that moves keeps the month's usage: a 429 until the new month ends", async () => {
    const { app, get } = await setup('2026-11-20T12:00:00Z');
    try {
      const fifth = { 'x-anchor': '2026-01-05T00:00:00Z' };
      for (let i = 0; i < 3; i++) expect((await get('/calendar/billing', fifth)).status).toBe(200);
      // From the 6th, the month runs from Nov 6 to Dec 6, and the 3 were spent in it.
      const moved = await get('/calendar/billing', { 'x-anchor': '2026-01-06T00:00:00Z' });
      expect(moved.status).toBe(429);
      expect(retryAfter(moved)).toBe(15 * DAY_S + 12 * HOUR_S);
      expect(limitsOf(moved)).toEqual([{ name: 'monthly', r: 0, t: 15 * DAY_S + 12 * HOUR_S }]);
      // Under the old day, its own month, to Dec 5.
      const back = await get('/calendar/billing', fifth);
      expect(retryAfter(back)).toBe(14 * DAY_S + 12 * HOUR_S);
    } finally {
      await app.close();
    }
  });
});
