/**
 * A calendar quota whose anchor changes (a customer's billing day moves), on the memory store and
 * on Redis through every client library, under a test clock. The usage counted before the change
 * counts in the new current window whenever it was last counted at or after that window's start,
 * and no longer once a window starts after it: no fresh quota for the change alone, no usage
 * charged past the window it may belong to; requests at once under two anchors share one quota.
 * Through the store, and through RateLimitService.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import {
  STORE_TARGETS,
  TestClock,
  useClockedStores,
  useRedis,
  REDIS_DECIDES_MS,
} from '../../support/stores.js';
import { uniquePrefix } from '../http/fixtures/app.js';

const H = 3_600_000;
const D = 24 * H;
const at = Date.parse;

type Algorithm = 'fixed-window' | 'sliding-window-counter';
type Unit = 'day' | 'week' | 'month';

const quota = (algorithm: Algorithm, calendar: Unit, anchor: string) => ({
  algorithm,
  calendar,
  anchor,
  threshold: 5,
  name: 'quota',
});

const view = ({ allowed, remaining, retryAfterMs, resetAfterMs }: RateLimitDecision) => ({
  allowed,
  remaining,
  retryAfterMs,
  resetAfterMs,
});

describe.each(STORE_TARGETS)('a calendar anchor that changes, on %s', (target) => {
  const stores = useClockedStores(target);

  /** A store at `when`; `consume` counts one unit on one key, under the anchor it is given. */
  async function setup(when: string) {
    const { clock, store } = await stores();
    clock.ms = at(when);
    const tag = randomUUID();
    const consumeOn = (key: string, policy: RateLimitPolicy<unknown>) =>
      store.consume([`anchor:{${tag}}:${key}`], [resolvePolicy(policy, 'anchor change')], [1]);
    const consume = (policy: RateLimitPolicy<unknown>) => consumeOn('customer', policy);
    return { clock, consume, consumeOn };
  }

  describe('fixed window', () => {
    const fw = (calendar: Unit, anchor: string) => quota('fixed-window', calendar, anchor);

    it('5 of 5 on a month from the 5th; the anchor moves to the 6th: nothing left until Dec 6', async () => {
      const s = await setup('2026-11-20T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(fw('month', '2026-01-05'));
      expect(await s.consume(fw('month', '2026-01-05'))).toMatchObject({
        allowed: false,
        retryAfterMs: 14 * D + 12 * H,
      });
      // The new current window runs from Nov 6 to Dec 6: the 5 were spent in it.
      const sixth = fw('month', '2026-01-06');
      expect(view(await s.consume(sixth))).toEqual({
        allowed: false,
        remaining: 0,
        retryAfterMs: 15 * D + 12 * H,
        resetAfterMs: 15 * D + 12 * H,
      });
      // The old window has ended; the new one has not.
      s.clock.ms = at('2026-12-05T12:00:00Z');
      expect(await s.consume(sixth)).toMatchObject({ allowed: false, retryAfterMs: 12 * H });
      s.clock.ms = at('2026-12-06T00:00:00Z');
      expect(await s.consume(sixth)).toMatchObject({
        allowed: true,
        remaining: 4,
        resetAfterMs: 31 * D,
      });
    });

    it('moved back to the 4th: nothing left until Dec 4, then a fresh month, charged once', async () => {
      const s = await setup('2026-11-20T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(fw('month', '2026-01-05'));
      const fourth = fw('month', '2026-01-04');
      expect(await s.consume(fourth)).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: 13 * D + 12 * H,
      });
      // Counted on Nov 20, before the window from Dec 4 began: the old window still runs to
      // Dec 5, but its usage belongs to the month that ended.
      s.clock.ms = at('2026-12-04T01:00:00Z');
      expect(await s.consume(fourth)).toMatchObject({ allowed: true, remaining: 4 });
    });

    it('moved to a day whose window began after the last use: a fresh quota, as the calendar says', async () => {
      const s = await setup('2026-10-28T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(fw('month', '2026-01-25'));
      s.clock.ms = at('2026-11-10T12:00:00Z');
      expect(await s.consume(fw('month', '2026-01-25'))).toMatchObject({ allowed: false });
      // From the 5th: the window began on Nov 5, after every unit was spent (Oct 28).
      expect(await s.consume(fw('month', '2026-01-05'))).toMatchObject({
        allowed: true,
        remaining: 4,
        resetAfterMs: 24 * D + 12 * H,
      });
    });

    it('moved to a day whose window holds the last use: all of the old count counts', async () => {
      const s = await setup('2026-10-28T12:00:00Z');
      const old = fw('month', '2026-01-25');
      for (let i = 0; i < 3; i++) await s.consume(old);
      s.clock.ms = at('2026-11-08T12:00:00Z');
      for (let i = 0; i < 2; i++) await s.consume(old);
      // Some of the five were spent since Nov 5, and one count cannot tell which: all count.
      s.clock.ms = at('2026-11-10T12:00:00Z');
      expect(await s.consume(fw('month', '2026-01-05'))).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: 24 * D + 12 * H,
      });
    });

    it('a week from Monday 09:00 moved to Wednesday 09:00 (Thursday): nothing left until next Wednesday', async () => {
      // Thursday, November 19.
      const s = await setup('2026-11-19T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(fw('week', '2026-11-16T09:00:00Z'));
      const wednesday = fw('week', '2026-11-18T09:00:00Z');
      expect(await s.consume(wednesday)).toMatchObject({
        allowed: false,
        remaining: 0,
        retryAfterMs: 5 * D + 21 * H,
      });
      s.clock.ms = at('2026-11-25T09:00:00Z');
      expect(await s.consume(wednesday)).toMatchObject({ allowed: true, remaining: 4 });
    });

    it('a day from 09:00 moved to 18:00, then to 06:00: each new day holds what was spent in it', async () => {
      const s = await setup('2026-11-20T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(fw('day', '2026-01-01T09:00:00Z'));
      // At noon the day from 18:00 began yesterday, before the spending: it holds it all.
      expect(await s.consume(fw('day', '2026-01-01T18:00:00Z'))).toMatchObject({
        allowed: false,
        retryAfterMs: 6 * H,
      });
      // So does the day from 06:00 today, until 06:00 tomorrow.
      expect(await s.consume(fw('day', '2026-01-01T06:00:00Z'))).toMatchObject({
        allowed: false,
        retryAfterMs: 18 * H,
      });
      s.clock.ms = at('2026-11-20T18:00:00Z');
      expect(await s.consume(fw('day', '2026-01-01T18:00:00Z'))).toMatchObject({
        allowed: true,
        remaining: 4,
      });
    });
  });

  it.each<Algorithm>(['fixed-window', 'sliding-window-counter'])(
    '%s: 40 requests at once, under the 5th and the 6th in turn, are allowed 5 in all',
    async (algorithm) => {
      const s = await setup('2026-11-20T12:00:00Z');
      const days = ['2026-01-05', '2026-01-06'];
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => s.consume(quota(algorithm, 'month', days[i % 2]))),
      );
      expect(answers.filter((d) => d.allowed)).toHaveLength(5);
    },
  );

  describe('sliding counter', () => {
    const swc = (calendar: Unit, anchor: string) =>
      quota('sliding-window-counter', calendar, anchor);

    // Each case spends 5 under the old anchor, then asks under the new one; a key that had the new
    // anchor from the start, with the same spending, must answer the same: it was all spent in
    // windows of the new anchor that the old count is placed in.
    const CASES: [string, Unit, string, string, string, string][] = [
      [
        'month, the 5th moved to the 6th',
        'month',
        '2026-01-05',
        '2026-01-06',
        '2026-11-20T12:00:00Z',
        '2026-11-20T13:00:00Z',
      ],
      [
        'month, the 5th moved back to the 4th',
        'month',
        '2026-01-05',
        '2026-01-04',
        '2026-11-20T12:00:00Z',
        '2026-11-20T13:00:00Z',
      ],
      [
        'month, moved back, asked after the new window ended',
        'month',
        '2026-01-05',
        '2026-01-04',
        '2026-11-20T12:00:00Z',
        '2026-12-04T01:00:00Z',
      ],
      [
        'week, Monday moved to Wednesday',
        'week',
        '2026-11-16T09:00:00Z',
        '2026-11-18T09:00:00Z',
        '2026-11-19T12:00:00Z',
        '2026-11-19T13:00:00Z',
      ],
      [
        'day, 09:00 moved to 18:00',
        'day',
        '2026-01-01T09:00:00Z',
        '2026-01-01T18:00:00Z',
        '2026-11-20T12:00:00Z',
        '2026-11-20T13:00:00Z',
      ],
      [
        'day, 09:00 moved to 18:00, asked the next day',
        'day',
        '2026-01-01T09:00:00Z',
        '2026-01-01T18:00:00Z',
        '2026-11-20T12:00:00Z',
        '2026-11-21T02:00:00Z',
      ],
    ];

    it.each(CASES)('%s: as if the new anchor had always been in force', async (...c) => {
      const [, unit, from, to, spent, asked] = c;
      const s = await setup(spent);
      for (let i = 0; i < 5; i++) {
        await s.consumeOn('moved', swc(unit, from));
        await s.consumeOn('always', swc(unit, to));
      }
      s.clock.ms = at(asked);
      const moved = view(await s.consumeOn('moved', swc(unit, to)));
      expect(moved).toEqual(view(await s.consumeOn('always', swc(unit, to))));
    });

    it('5 of 5 from the 5th, moved to the 6th: the 5 count whole in the window to Dec 6', async () => {
      const s = await setup('2026-11-20T12:00:00Z');
      for (let i = 0; i < 5; i++) await s.consume(swc('month', '2026-01-05'));
      // Over in the current window: once the next (Dec 6 to Jan 6) is a fifth through.
      expect(view(await s.consume(swc('month', '2026-01-06')))).toEqual({
        allowed: false,
        remaining: 0,
        retryAfterMs: 15 * D + 12 * H + (31 * D) / 5,
        resetAfterMs: 15 * D + 12 * H + 31 * D,
      });
    });
  });
});

describe.each(STORE_TARGETS)('an anchor that changes, through RateLimitService on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('5 of 5 from the 5th, then the 6th: a 429 until the new window ends', async () => {
    const clock = new TestClock(at('2026-11-20T12:00:00Z'));
    const client = target === 'memory' ? undefined : await redis().connect(target);
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          clock: clock.now,
          ...(client === undefined ? {} : { redis: client, timeout: REDIS_DECIDES_MS }),
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    const limiter = app.get(RateLimitService);
    const key = `exports:${randomUUID()}`;
    for (let i = 0; i < 5; i++) {
      expect(
        await limiter.consume(key, quota('fixed-window', 'month', '2026-01-05')),
      ).toMatchObject({ allowed: true });
    }
    const moved = await limiter.consume(key, quota('fixed-window', 'month', '2026-01-06'));
    expect(view(moved)).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: 15 * D + 12 * H,
      resetAfterMs: 15 * D + 12 * H,
    });
  });
});
