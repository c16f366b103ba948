/**
 * A request's cost must not decide how long Redis is busy with it. The sliding log and the
 * concurrency leases keep one weighted member per decision, so a decision of cost 1,000,000 takes
 * the time of a decision of cost 1, and its key the memory of one. Redis's own measure (SLOWLOG,
 * every command logged with its duration in µs) is what is checked, never the wall clock.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { type Redis } from 'ioredis';
import { type RateLimitDecision, RedisStore } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { CLIENT_KINDS } from '../../support/clients.js';
import { TestClock, useRedis } from '../../support/stores.js';

const HEAVY = 1_000_000;
/** What one decision may keep Redis busy for, whatever its cost. */
const BUSY_LIMIT_US = 5_000;
/**
 * The bytes a key may differ by between a decision of cost 2 and one of cost `HEAVY`: both keep
 * the weighted layout (one of cost 1 keeps the plain one, without the `total` member).
 */
const DIGITS_SLACK = 16;

const LOG = resolvePolicy({ period: '1h', threshold: 100_000_000 }, 'heavy costs');
const TIGHT_LOG = resolvePolicy({ period: '1h', threshold: 1_500_000 }, 'heavy costs');
const LEASES = resolvePolicy(
  { algorithm: 'concurrency', period: '1m', threshold: 100_000_000 },
  'heavy costs',
);

const PATHS: Array<[string, boolean]> = [
  ['Functions', true],
  ['scripts', false],
];

describe.each(CLIENT_KINDS)('one heavy decision through %s', (kind) => {
  const redis = useRedis('redis');
  let admin: Redis;

  beforeAll(async () => {
    admin = redis().client();
    // Every command goes to the slow log, with the time Redis spent on it.
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.config('SET', 'slowlog-max-len', '1024');
  });

  /** `run`, and the µs Redis spent on the decision calls it made (the longest of them). */
  async function busy<T>(run: () => Promise<T>): Promise<{ result: T; us: number }> {
    await admin.slowlog('RESET');
    const result = await run();
    const entries = (await admin.slowlog('GET', 1024)) as Array<[number, number, number, string[]]>;
    const decisions = entries.filter(([, , , args]) =>
      /^(fcall|evalsha|eval)$/i.test(String(args[0])),
    );
    expect(decisions.length).toBeGreaterThan(0);
    return { result, us: Math.max(...decisions.map(([, , us]) => us)) };
  }

  describe.each(PATHS)('as %s', (_path, functions) => {
    /** Each measured call's time in Redis, by name. */
    function timed() {
      const times: Record<string, number> = {};
      const measure = async (name: string, run: () => Promise<RateLimitDecision>) => {
        const { result, us } = await busy(run);
        times[name] = us;
        return result;
      };
      return { times, measure };
    }

    /**
     * The key that took a heavy cost is no larger than one that took a cost of 2: its serialized
     * form (DUMP) differs by digits alone. MEMORY USAGE rounds to the allocator's size classes,
     * which a key's history of writes can move by 16 bytes either way, so it only bounds the whole.
     */
    async function expectAsSmall(heavy: string, light: string) {
      const [heavyDump, lightDump, heavyBytes] = await Promise.all([
        admin.dumpBuffer(heavy),
        admin.dumpBuffer(light),
        admin.memory('USAGE', heavy),
      ]);
      expect(heavyDump!.length - lightDump!.length).toBeLessThanOrEqual(DIGITS_SLACK);
      expect(heavyBytes!).toBeLessThan(256);
    }

    async function setup() {
      const clock = new TestClock();
      const store = new RedisStore({
        client: await redis().connect(kind),
        clock: clock.now,
        functions,
      });
      await store.warmUp();
      // Loads the script where scripts are used, so that no measured call is the first.
      await store.consume([`warm:{${randomUUID()}}`], [LOG], [1]);
      return { clock, store, key: () => `heavy:{${randomUUID()}}` };
    }

    it(`sliding log: consume, reject, refund by arrival and refund of cost ${HEAVY} each take Redis under 5 ms, and the key stays as small as for cost 2`, async () => {
      const { clock, store, key } = await setup();
      const [heavy, light] = [key(), key()];
      const { times, measure } = timed();

      const first = await measure('consume', () => store.consume([heavy], [LOG], [HEAVY]));
      expect(first).toMatchObject({ allowed: true, remaining: LOG.threshold - HEAVY });
      await store.consume([light], [LOG], [2]);
      await expectAsSmall(heavy, light);

      clock.advance(10);
      const second = await measure('second consume', () => store.consume([heavy], [LOG], [HEAVY]));
      expect(second.remaining).toBe(LOG.threshold - 2 * HEAVY);

      // A tight quota: the second request must wait for the first to leave the window.
      const tight = key();
      await store.consume([tight], [TIGHT_LOG], [HEAVY]);
      clock.advance(10);
      const rejected = await measure('rejection', () =>
        store.consume([tight], [TIGHT_LOG], [HEAVY]),
      );
      expect(rejected).toMatchObject({ allowed: false, remaining: 500_000 });
      expect(rejected.retryAfterMs).toBe(3_600_000 - 10);

      clock.advance(10);
      const back = await measure('refund by arrival', () =>
        store.refund([heavy], [LOG], [HEAVY], first),
      );
      expect(back.remaining).toBe(LOG.threshold - HEAVY);
      const none = await measure('refund', () => store.refund([heavy], [LOG], [HEAVY]));
      expect(none.remaining).toBe(LOG.threshold);

      expect(Object.entries(times).filter(([, us]) => us >= BUSY_LIMIT_US)).toEqual([]);
    });

    it(`concurrency: a lease of cost ${HEAVY} is taken, renewed, released and refunded each under 5 ms of Redis, in a key as small as for cost 2`, async () => {
      const { clock, store, key } = await setup();
      const [heavy, light] = [key(), key()];
      const { times, measure } = timed();

      const lease = await measure('take', () => store.consume([heavy], [LEASES], [HEAVY]));
      expect(lease).toMatchObject({ allowed: true, remaining: LEASES.threshold - HEAVY });
      await store.consume([light], [LEASES], [2]);
      await expectAsSmall(heavy, light);

      clock.advance(10);
      const other = await measure('take another', () => store.consume([heavy], [LEASES], [HEAVY]));
      expect(other.remaining).toBe(LEASES.threshold - 2 * HEAVY);
      clock.advance(10);
      const renewed = await measure('renew', () => store.renew!([heavy], [LEASES], [HEAVY], lease));
      expect(renewed.allowed).toBe(true);
      const released = await measure('release', () =>
        store.release!([heavy], [LEASES], [HEAVY], lease),
      );
      expect(released.remaining).toBe(LEASES.threshold - HEAVY);
      const refunded = await measure('refund', () => store.refund!([heavy], [LEASES], [HEAVY]));
      expect(refunded.remaining).toBe(LEASES.threshold);

      expect(Object.entries(times).filter(([, us]) => us >= BUSY_LIMIT_US)).toEqual([]);
    });
  });
});
