/**
 * Windows by the calendar on the fixed window and the sliding counter, on the memory store and on
 * Redis through every client library, under a test clock: hand-built windows of irregular lengths
 * (days of 23 and 25 hours, months of 28 and 31 days), so that an answer worked out from a fixed
 * period is told apart from one worked out from the real window.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import {
  MemoryStore,
  type RateLimitDecision,
  type RateLimitStore,
  RedisStore,
} from '../../../lib/index.js';
import { STORE_TARGETS, TestClock, useRedis } from '../../support/stores.js';
import { createUserWithout } from '../../support/acl-users.js';
import {
  calendarPolicy,
  DAY_US,
  HOUR_US,
  skewed,
  startsFrom,
  windowsAt,
} from '../../support/calendar-windows.js';

const H = HOUR_US / 1000;
const D = DAY_US / 1000;
// Two ordinary days, then a day of 23 hours (w[2]), one of 25 (w[3]), a day, February and March.
const LENGTHS_US = [24, 24, 23, 25, 24, 24 * 28, 24 * 31, 24, 24, 24].map((h) => h * HOUR_US);
const STARTS = startsFrom(1_700_000_000_000_000, LENGTHS_US);
const LONGEST_US = 31 * DAY_US;
const CALENDAR = windowsAt(STARTS);
/** Window k's start, in ms of the test clock. */
const start = (k: number) => STARTS[k] / 1000;

// Redis pads TTLs by this much under a simulated clock (SIMULATED_CLOCK_TTL_SLACK_MS, redis-time.ts).
const SLACK_MS = 600_000;

type Algorithm = 'fixed-window' | 'sliding-window-counter';

/** A decision without its policy, whose calendar differs between the stores compared. */
const view = ({ allowed, remaining, retryAfterMs, resetAfterMs }: RateLimitDecision) => ({
  allowed,
  remaining,
  retryAfterMs,
  resetAfterMs,
});

describe.each(STORE_TARGETS)('calendar windows on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');

  /**
   * Stores under a test clock at `at`; without it, on their own clocks: Redis TIME, or with
   * `timeRefused` the store's estimate of it, through a user that may not run TIME.
   */
  async function setup(at?: number, timeRefused = false) {
    const clock = new TestClock(at);
    const now = at === undefined ? undefined : clock.now;
    let store: RateLimitStore;
    if (target === 'memory') store = new MemoryStore({ clock: now });
    else {
      const user = timeRefused ? await userWithoutTime() : undefined;
      const client = await redis().connect(target, { user });
      store = new RedisStore({ client, clock: now, answerWithinMs: 1_000 });
      await (store as RedisStore).warmUp();
    }
    const id = randomUUID();
    const keyOf = (algorithm: Algorithm) => `cal:{${id}}:${algorithm}`;
    const consume = (algorithm: Algorithm, threshold: number, calendar = CALENDAR) =>
      store.consume(
        [keyOf(algorithm)],
        [calendarPolicy(algorithm, threshold, calendar, LONGEST_US)],
        [1],
      );
    /** The key's PTTL in Redis; undefined on the memory store. */
    const pttl = async (algorithm: Algorithm) =>
      target === 'memory' ? undefined : await redis().shared.pttl(keyOf(algorithm));
    return { clock, consume, pttl };
  }

  /** An ACL user that may do everything but TIME, as some managed services allow. */
  function userWithoutTime() {
    return createUserWithout(redis().shared, ['-time'], 'calendar');
  }

  describe('fixed window', () => {
    it('counts until the real end of a 23-hour day, and starts again exactly there', async () => {
      const s = await setup(start(2) + 10 * H);
      const fw = () => s.consume('fixed-window', 3);
      expect(await fw()).toMatchObject({ allowed: true, remaining: 2, resetAfterMs: 13 * H });
      // The key lives as long as a window that began by its last write can last, should the
      // windows move: the longest window (31 days here) and a second, past this window's end.
      const ttl = await s.pttl('fixed-window');
      if (ttl !== undefined) {
        expect(ttl).toBeGreaterThan(LONGEST_US / 1000 + 1000 + SLACK_MS - 5_000);
        expect(ttl).toBeLessThanOrEqual(LONGEST_US / 1000 + 1000 + SLACK_MS);
      }
      s.clock.advance(H);
      expect(await fw()).toMatchObject({ allowed: true, remaining: 1 });
      s.clock.advance(11 * H);
      expect(await fw()).toMatchObject({ allowed: true, remaining: 0, resetAfterMs: H });
      expect(await fw()).toMatchObject({ allowed: false, retryAfterMs: H, resetAfterMs: H });

      s.clock.ms = start(3) - 1;
      expect(await fw()).toMatchObject({ allowed: false, retryAfterMs: 1, resetAfterMs: 1 });
      s.clock.advance(1);
      // The next day lasts 25 hours.
      expect(await fw()).toMatchObject({ allowed: true, remaining: 2, resetAfterMs: 25 * H });
    });

    it('a month of 28 days ends after 28 days, one of 31 after 31', async () => {
      const s = await setup(start(5) + 3 * D + 7);
      const fw = () => s.consume('fixed-window', 2);
      await fw();
      await fw();
      expect(await fw()).toMatchObject({ allowed: false, retryAfterMs: 25 * D - 7 });
      const ttl = await s.pttl('fixed-window');
      if (ttl !== undefined) expect(ttl).toBeGreaterThan(25 * D - 7 + SLACK_MS - 5_000);
      s.clock.ms = start(6) + 30 * D;
      expect(await fw()).toMatchObject({ allowed: true, remaining: 1, resetAfterMs: D });
      await fw();
      expect(await fw()).toMatchObject({ allowed: false, retryAfterMs: D });
      s.clock.advance(D);
      expect(await fw()).toMatchObject({ allowed: true, remaining: 1, resetAfterMs: D });
    });
  });

  describe('sliding counter', () => {
    it('weights the previous day by the share of the current one still ahead, whatever their lengths', async () => {
      const s = await setup(start(2) + H);
      const swc = () => s.consume('sliding-window-counter', 10);
      for (let i = 0; i < 10; i++) await swc();
      // Full: in the next window (25 hours), once a tenth of it has passed.
      expect(await swc()).toMatchObject({
        allowed: false,
        retryAfterMs: 22 * H + 2.5 * H,
        resetAfterMs: 22 * H + 25 * H,
      });
      // Five hours into the 25-hour day, 20/25 of the previous day's 10 still count: 8.
      s.clock.ms = start(3) + 5 * H;
      expect(await swc()).toMatchObject({ allowed: true, remaining: 1 });
      expect(await swc()).toMatchObject({ allowed: true, remaining: 0 });
      // Once 10 - 2 - 1 = 7 of the previous day count, 17.5 of its 25 hours before the end.
      expect(await swc()).toMatchObject({
        allowed: false,
        retryAfterMs: 2.5 * H,
        resetAfterMs: 20 * H + 24 * H,
      });
      const ttl = await s.pttl('sliding-window-counter');
      if (ttl !== undefined) expect(ttl).toBeGreaterThan(44 * H + SLACK_MS - 5_000);
      s.clock.advance(2.5 * H);
      expect(await swc()).toMatchObject({ allowed: true, remaining: 0 });
    });
  });

  describe('a caller whose clock is a window off', () => {
    // The store's now is in the window before, or after, the one the caller's estimate is in.
    it.each([
      ['behind', 20 * H],
      ['ahead', -20 * H],
    ])("the store's now %s the caller's still picks its own window", async (_, skewMs) => {
      const at = start(3) + 10 * H;
      const off = skewed(CALENDAR, skewMs * 1000);
      const [s, exact] = [await setup(at), await setup(at)];
      for (const algorithm of ['fixed-window', 'sliding-window-counter'] as const) {
        for (let i = 0; i < 5; i++) {
          const [got, want] = [
            await s.consume(algorithm, 4, off),
            await exact.consume(algorithm, 4),
          ];
          // Past the last bound the counter's next window has a stand-in length (see window_of),
          // which its resets and waits show; what it counts is exact.
          const exactly = algorithm === 'fixed-window' || skewMs > 0;
          if (exactly) expect(view(got)).toEqual(view(want));
          else expect([got.allowed, got.remaining]).toEqual([want.allowed, want.remaining]);
          s.clock.advance(6 * H);
          exact.clock.advance(6 * H);
        }
        [s.clock.ms, exact.clock.ms] = [at, at];
      }
    });

    it('a store now outside every window the caller sent counts at the nearest, and keeps a TTL', async () => {
      const s = await setup(start(4) + H);
      // The caller's estimate is two windows behind: its bounds end where the store's window starts.
      const off = skewed(CALENDAR, -48 * H * 1000);
      expect(await s.consume('fixed-window', 2, off)).toMatchObject({
        allowed: true,
        remaining: 1,
        resetAfterMs: 1,
      });
      const ttl = await s.pttl('fixed-window');
      if (ttl !== undefined) expect(ttl).toBeGreaterThan(0);
      expect(await s.consume('sliding-window-counter', 2, off)).toMatchObject({ allowed: true });
    });
  });

  // Where Redis refuses TIME, the store sends its own estimate of Redis's clock.
  const ownClocks: [string, boolean][] =
    target === 'memory'
      ? [['its monotonic clock', false]]
      : [
          ['Redis TIME', false],
          ['the estimate decisions carry where TIME is refused', true],
        ];
  it.each(ownClocks)(
    "on the store's own clock, the window is the one holding its now (%s)",
    async (_, refused) => {
      const nowUs = Date.now() * 1000;
      const starts = startsFrom(
        nowUs - 140 * 60_000_000,
        [1, 1, 2, 1, 1].map((h) => h * HOUR_US),
      );
      const s = await setup(undefined, refused);
      // 100 minutes of the 2-hour window are left, less what passes meanwhile.
      const left = 100 * 60_000;
      const first = await s.consume('fixed-window', 1, windowsAt(starts));
      expect(first.resetAfterMs).toBeLessThanOrEqual(left);
      expect(first.resetAfterMs).toBeGreaterThan(left - 5_000);
      const ttl = await s.pttl('fixed-window');
      if (ttl !== undefined) expect(ttl).toBeGreaterThan(left - 5_000);
      const rejected = await s.consume('fixed-window', 1, windowsAt(starts));
      expect(rejected.allowed).toBe(false);
      expect(rejected.retryAfterMs).toBeGreaterThan(left - 5_000);
    },
  );
});
