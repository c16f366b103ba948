/**
 * What strict spacing promises, as the partner sees it: calls that three module instances make
 * through `run()`, with default options, start so that no span of one period holds more than
 * `threshold` of them, even when the event loop is stalled right before a slot (a late start
 * followed by one on time is what bunched them); and they are booked at no less than 90% of the
 * rate.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  MemoryStore,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { type ClientKind } from '../support/clients.js';
import { STORE_TARGETS, TestClock, useRedis } from '../support/stores.js';

const PERIOD_MS = 1000;
const THRESHOLD = 10;
const POLICIES: Record<string, RateLimitPolicy> = {
  'leaky-bucket, burst 1': {
    algorithm: 'leaky-bucket',
    period: PERIOD_MS / 1000,
    threshold: THRESHOLD,
    burst: 1,
  },
  'token-bucket, burst 1': {
    algorithm: 'token-bucket',
    period: PERIOD_MS / 1000,
    threshold: THRESHOLD,
    burst: 1,
  },
  'the default algorithm': { period: PERIOD_MS / 1000, threshold: THRESHOLD },
};
const CALLS = 3 * THRESHOLD;
const PAUSE_MS = 200;
// How late a strict start may run behind its slot: two thirds of a twelfth of the period.
const LATE_LIMIT_MS = ((PERIOD_MS / 12) * 2) / 3;

/**
 * Runs `work`, counting the times this process's event loop was held up for longer than
 * `limitMs` meanwhile (a busy machine's stalls): each may make one start late from its slot.
 */
async function stallsDuring(limitMs: number, work: () => Promise<unknown>): Promise<number> {
  const everyMs = 5;
  let stalls = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last - everyMs > limitMs) stalls++;
    last = now;
  }, everyMs);
  try {
    await work();
    return stalls;
  } finally {
    clearInterval(timer);
  }
}

/** Blocks the event loop, as a long synchronous task or a busy machine does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: no timer, no reply, no other call can run meanwhile
  }
}

/**
 * The starts a partner that counts per sliding window would refuse: each start that finds
 * `THRESHOLD` others in the period before it, `(start - period, start]`.
 */
function overLimit(starts: readonly number[]): string[] {
  const sorted = [...starts].sort((x, y) => x - y);
  const over: string[] = [];
  for (let i = THRESHOLD; i < sorted.length; i++) {
    const span = sorted[i] - sorted[i - THRESHOLD];
    if (span < PERIOD_MS) over.push(`starts ${i - THRESHOLD}..${i} within ${span.toFixed(1)} ms`);
  }
  return over;
}

describe.each<'memory' | ClientKind>(STORE_TARGETS)(
  'strict spacing on %s, three instances',
  (target) => {
    const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
    const apps: INestApplication[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });

    async function instances(): Promise<RateLimitService[]> {
      const keyPrefix = `strict-${randomUUID().slice(0, 8)}`;
      const shared = target === 'memory' ? new MemoryStore() : undefined;
      const services: RateLimitService[] = [];
      for (let i = 0; i < 3; i++) {
        const store =
          shared !== undefined
            ? { store: shared }
            : { redis: await redis().connect(target as ClientKind) };
        // Decisions get 1 s, more than the stalls below: the spacing is under test here, not the
        // fallback a stall past the timeout may bring (which spaces each instance on its own).
        const ref = await Test.createTestingModule({
          imports: [RateLimitModule.forRoot({ ...store, keyPrefix, timeout: 1000 })],
        }).compile();
        const app = ref.createNestApplication({ logger: false });
        await app.init();
        apps.push(app);
        services.push(app.get(RateLimitService));
      }
      return services;
    }

    it.each(Object.keys(POLICIES))(
      'never lets a period hold more than threshold starts, across stalls (%s)',
      async (name) => {
        const services = await instances();
        const key = `partner:${randomUUID()}`;
        const starts: number[] = [];
        // The partner: it notes each start; after the 3rd and the 15th it blocks the loop past
        // the next slot, by less than the late limit (two thirds of the margin: 55.6 ms; the next
        // call starts ~30 ms late) and by more (~150 ms late: that call must book again, not start).
        const partner = () => {
          starts.push(performance.now());
          if (starts.length === 3) stall(PERIOD_MS / THRESHOLD + 30);
          if (starts.length === 15) stall(PERIOD_MS / THRESHOLD + 150);
        };
        const calls = Array.from({ length: CALLS }, (_, i) =>
          services[i % 3].run(key, POLICIES[name], partner, { maxWait: '20s' }),
        );
        await Promise.all(calls);

        expect(starts).toHaveLength(CALLS);
        expect(overLimit(starts)).toEqual([]);
      },
    );

    if (target !== 'memory') {
      it('counts a call late from its slot, not from when it was sent: time before Redis decided is not lateness', async () => {
        const services = await instances();
        const key = `held:${randomUUID()}`;
        const policy = POLICIES['leaky-bucket, burst 1'];
        const starts: number[] = [];
        // Redis holds every call for 200 ms before deciding, more than the late limit. Each is
        // then booked from Redis's own now, so each starts on its slot, with the one booking.
        const admin = redis().client();
        const redisMs = async () => {
          const [s, us] = await admin.time();
          return Number(s) * 1000 + Number(us) / 1000;
        };
        const before = await redisMs();
        await admin.client('PAUSE', PAUSE_MS);
        const stalls = await stallsDuring(LATE_LIMIT_MS, () =>
          Promise.all(
            Array.from({ length: THRESHOLD }, (_, i) =>
              services[i % 3].run(key, policy, () => starts.push(performance.now()), {
                maxWait: '20s',
              }),
            ),
          ),
        );
        expect(starts).toHaveLength(THRESHOLD);
        // How far Redis's bucket is booked, in slots since the pause ended: one per start, and
        // one more past the last. Had the held calls been judged late, each would have booked
        // twice, its first slot passing unused: twice as many. A stall of this process past the
        // late limit (a busy machine) may make a start really late, which then books again, as
        // promised: one slot more per stall.
        const { retryAfterMs } = await services[0].peek(key, policy);
        const bookedUntil = (await redisMs()) + retryAfterMs;
        const slotMs = (PERIOD_MS / THRESHOLD) * (13 / 12);
        const slots = (bookedUntil - before - PAUSE_MS) / slotMs;
        expect(slots).toBeGreaterThanOrEqual(THRESHOLD - 1);
        expect(slots).toBeLessThan(THRESHOLD + 4 + stalls);
      });
    }
  },
);

describe('strict spacing, as booked', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function service(clock: TestClock): Promise<RateLimitService> {
    const store = new MemoryStore({ clock: clock.now });
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ store })],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  it('books slots a twelfth of an interval further apart: at least 90% of the rate', async () => {
    // The store's clock stands still, so every booking is made at the same moment: each permit's
    // wait is its slot, and the slots show the spacing exactly.
    const rateLimit = await service(new TestClock());
    const policy = POLICIES['leaky-bucket, burst 1'];
    const permits = await Promise.all(
      Array.from({ length: 8 }, () => rateLimit.acquire('spaced', policy, { maxWait: '5s' })),
    );
    const waits = permits.map((p) => p.waitMs ?? 0).sort((x, y) => x - y);
    const intervalUs = Math.ceil((PERIOD_MS * 1000 * 13) / 12 / THRESHOLD);
    // Each permit has a slot of its own, the slots k stretched intervals from the first. A permit
    // whose start ran later than the margin allows (a busy machine's timer) lets its slot pass and
    // takes a later one, as promised: so the slots are distinct, not necessarily contiguous.
    const slots = waits.map((w) => Math.round((w * 1000) / intervalUs));
    expect(waits).toEqual(slots.map((k) => Math.ceil((k * intervalUs) / 1000)));
    expect(slots[0]).toBe(0);
    expect(new Set(slots).size).toBe(permits.length);
    expect(intervalUs / 1000).toBeLessThanOrEqual(PERIOD_MS / THRESHOLD / 0.9);
    // The permit speaks of the policy as given, not of its stretched form.
    expect(permits[0].policies[0].policy.periodMs).toBe(PERIOD_MS);
  });

  it('books at the exact spacing with strict: false', async () => {
    const rateLimit = await service(new TestClock());
    const policy = POLICIES['leaky-bucket, burst 1'];
    const permits = await Promise.all(
      Array.from({ length: 5 }, () =>
        rateLimit.acquire('exact', policy, { maxWait: '5s', strict: false }),
      ),
    );
    const waits = permits.map((p) => p.waitMs ?? 0).sort((x, y) => x - y);
    expect(waits).toEqual([0, 100, 200, 300, 400]);
  });

  it('names the option when strict is not a boolean, and refuses it where it does not apply', async () => {
    const rateLimit = await service(new TestClock());
    const policy = POLICIES['leaky-bucket, burst 1'];
    await expect(
      rateLimit.acquire('k', policy, { strict: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/RateLimitService\.acquire.*strict.*true \(the default\) or false/s);
    const consume = async () =>
      rateLimit.consume('k', policy, { strict: true } as unknown as { cost: number });
    await expect(consume()).rejects.toThrow(/strict applies only to acquire\(\) and run\(\)/);
    await expect(
      rateLimit.run('k', policy, () => ({ used: 1 }), { usage: (r) => r.used, strict: true }),
    ).rejects.toThrow(/strict.*omitted with usage/s);
  });
});
