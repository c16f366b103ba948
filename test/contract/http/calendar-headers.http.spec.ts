/**
 * The rate-limit headers of policies that follow the calendar, over HTTP through a real Nest app on
 * both stores, under a test clock: `w` is the length of the window the decision was made in (a
 * day of 23 hours says 82800), `t` and `Retry-After` its real end.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RateLimit, RateLimitModule } from '../../../lib/index.js';
import { type CalendarWindow } from '../../../lib/policy/calendar-window.js';
import { RATE_LIMIT_POLICY } from '../../../lib/rate-limit.constants.js';
import { type PolicyTemplate } from '../../../lib/route/policy-template.js';
import { HOUR_US, startsFrom, windowsAt } from '../../support/calendar-windows.js';
import { STORE_KINDS, TestClock, useRedis } from '../../support/stores.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { limitsOf, policiesOf, retryAfter } from './fixtures/policy-app.js';

const H = HOUR_US / 1000;
// Two ordinary days, one of 23 hours (2), one of 25 (3), then ordinary days.
const STARTS = startsFrom(
  1_700_000_000_000_000,
  [24, 24, 23, 25, 24, 24, 24].map((h) => h * HOUR_US),
);
const CALENDAR = windowsAt(STARTS);
const start = (k: number) => STARTS[k] / 1000;

@Controller('calendar')
class CalendarController {
  @RateLimit({ algorithm: 'fixed-window', period: '25h', threshold: 2, name: 'daily' })
  @Get('day')
  day() {
    return 'ok';
  }

  @RateLimit([
    { algorithm: 'sliding-window-counter', period: '25h', threshold: 5, name: 'daily' },
    { period: '1m', threshold: 100, name: 'minute' },
  ])
  @Get('pair')
  pair() {
    return 'ok';
  }
}

/**
 * Until policies can say `calendar`, the route's `daily` policy is given `calendar`'s windows
 * the way a validated one would carry them.
 */
function followCalendar(handler: object, calendar: CalendarWindow): void {
  const templates = Reflect.getMetadata(RATE_LIMIT_POLICY, handler) as PolicyTemplate[];
  const changed = templates.map((t) => {
    if (t.name !== 'daily') return t;
    const fixed = Object.freeze({ ...t.fixed!, calendar });
    return { ...t, fixed, resolve: () => fixed };
  });
  Reflect.defineMetadata(RATE_LIMIT_POLICY, changed, handler);
}
followCalendar(CalendarController.prototype.day, CALENDAR);
followCalendar(CalendarController.prototype.pair, CALENDAR);

describe.each(STORE_KINDS)('calendar headers on the %s store', (kind) => {
  const redis = useRedis(kind);

  async function setup(at: number) {
    const clock = new TestClock(at);
    const app: INestApplication = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          clock: clock.now,
          ...(kind === 'redis' ? { redis: redis().url } : {}),
        }),
      ],
      controllers: [CalendarController],
    });
    const user = uniqueUser();
    const get = (path: string) => request(app.getHttpServer()).get(path).set(USER_HEADER, user);
    return { app, clock, get };
  }

  it('a day of 23 hours says w=82800 and resets at its end; the next, of 25, says w=90000', async () => {
    const { app, clock, get } = await setup(start(2) + 10 * H);
    try {
      const first = await get('/calendar/day');
      expect(first.status).toBe(200);
      expect(policiesOf(first)).toEqual([{ name: 'daily', q: 2, w: 82_800 }]);
      expect(limitsOf(first)).toEqual([{ name: 'daily', r: 1, t: 13 * 3600 }]);
      await get('/calendar/day');
      for (let i = 0; i < 2; i++) {
        // The second rejection may be the block cache's replay: the same window still.
        const rejected = await get('/calendar/day');
        expect(rejected.status).toBe(429);
        expect(retryAfter(rejected)).toBe(13 * 3600);
        expect(policiesOf(rejected)).toEqual([{ name: 'daily', q: 2, w: 82_800 }]);
      }

      clock.ms = start(3) + H;
      const next = await get('/calendar/day');
      expect(next.status).toBe(200);
      expect(policiesOf(next)).toEqual([{ name: 'daily', q: 2, w: 90_000 }]);
      expect(limitsOf(next)).toEqual([{ name: 'daily', r: 1, t: 24 * 3600 }]);
    } finally {
      await app.close();
    }
  });

  it('beside a policy of fixed period, each says its own window', async () => {
    const { app, clock, get } = await setup(start(3) + 24 * H);
    try {
      expect(policiesOf(await get('/calendar/pair'))).toEqual([
        { name: 'daily', q: 5, w: 90_000 },
        { name: 'minute', q: 100, w: 60 },
      ]);
      clock.advance(2 * H);
      expect(policiesOf(await get('/calendar/pair'))).toEqual([
        { name: 'daily', q: 5, w: 86_400 },
        { name: 'minute', q: 100, w: 60 },
      ]);
    } finally {
      await app.close();
    }
  });
});
