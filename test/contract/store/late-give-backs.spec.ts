/**
 * A give-back on the buckets (a settle below the estimate, a refund of a request) never puts back
 * more than the bucket would hold had the request never been made: the tokens it took would have
 * spilt over the top while the bucket was full. Timelines under a test clock through
 * RateLimitService (a real Nest module, with its wrappers) and through the store itself, on the
 * memory store and on Redis through every client; each counts exactly what got through.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type RateAlgorithm } from '../../../lib/algorithms/algorithm.js';
import {
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitReservation,
  RateLimitService,
  type RateLimitStore,
  RedisStore,
} from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import { STORE_TARGETS, TestClock, useClockedStores, useRedis } from '../../support/stores.js';
import { uniquePrefix } from '../http/fixtures/app.js';

const BUCKETS: RateAlgorithm[] = ['token-bucket', 'leaky-bucket'];
/** 10 per second, 10 at once: full again 1 s after it was emptied. */
const TEN_PER_SECOND = (algorithm: RateAlgorithm) => ({
  algorithm,
  period: '1s',
  threshold: 10,
  name: 'ten',
});

/** How many of `count` requests of 1, made one after another at this instant, are allowed. */
async function allowedOf(count: number, consume: () => Promise<RateLimitDecision>) {
  let allowed = 0;
  for (let i = 0; i < count; i++) if ((await consume()).allowed) allowed++;
  return allowed;
}

describe.each(STORE_TARGETS)('late give-backs on the buckets, on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const stores = useClockedStores(target);
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function service(clock: TestClock): Promise<RateLimitService> {
    const client = target === 'memory' ? undefined : await redis().connect(target);
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          clock: clock.now,
          ...(client === undefined ? {} : { redis: client }),
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  /** The store's own calls on one key under TEN_PER_SECOND. */
  async function onStore(algorithm: RateAlgorithm) {
    const { clock, store } = await stores();
    const policy = resolvePolicy(TEN_PER_SECOND(algorithm), 'late give-backs');
    const key = `late:{${randomUUID()}}`;
    const on = (cost: number) => [[key], [policy], [cost]] as const;
    return {
      clock,
      store: store as RateLimitStore & Required<Pick<RateLimitStore, 'settle' | 'refund'>>,
      consume: (cost = 1) => store.consume(...on(cost)),
      settle: (delta: number, of: RateLimitDecision) => store.settle!(...on(delta), of),
      refund: (cost: number, of: RateLimitDecision) => store.refund!(...on(cost), of),
    };
  }

  describe.each(BUCKETS.map((a) => [a]))('%s', (algorithm) => {
    it('reserve(10), 2.1 s later 10 consumes, then settle(0): nothing more gets through (10, not 20)', async () => {
      const clock = new TestClock();
      const limiter = await service(clock);
      const key = `late:${randomUUID()}`;
      const policy = TEN_PER_SECOND(algorithm);
      const ticket = await limiter.reserve(key, policy, 10);
      expect(ticket.allowed).toBe(true);
      clock.advance(2_100);
      const first = await allowedOf(20, () => limiter.consume(key, policy));
      expect(first).toBe(10);
      // The bucket was full again before these 10: the reservation's tokens spilt over by then.
      await ticket.settle(0);
      const second = await allowedOf(20, () => limiter.consume(key, policy));
      expect(first + second).toBe(10);
    });

    it('the same timeline with the reservation refunded as a request that does not count (10, not 20)', async () => {
      const s = await onStore(algorithm);
      const reservation = await s.consume(10);
      expect(reservation.allowed).toBe(true);
      s.clock.advance(2_100);
      const first = await allowedOf(20, () => s.consume());
      await s.refund(10, reservation);
      const second = await allowedOf(20, () => s.consume());
      expect([first, second]).toEqual([10, 0]);
    });

    it('a bucket refilled part way, then drained by others, gets back only what would not have spilt (3, not 10)', async () => {
      // reserve(10) empties it; 0.8 s later it holds 8 and 8 are taken; 0.1 s later it holds 1.
      // Had the reservation never been made it would have been full until the 8 (2 spilt), then
      // held 2, and now 3: the give-back brings it to 3, where today's cap brought it to 10.
      for (const giveBack of ['settle', 'refund'] as const) {
        const s = await onStore(algorithm);
        const reservation = await s.consume(10);
        s.clock.advance(800);
        expect(await allowedOf(8, () => s.consume())).toBe(8);
        s.clock.advance(100);
        if (giveBack === 'settle') await s.settle(-10, reservation);
        else await s.refund(10, reservation);
        expect([giveBack, await allowedOf(20, () => s.consume())]).toEqual([giveBack, 3]);
      }
    });

    it('a give-back with nothing written since gives all of it back, up to full', async () => {
      const s = await onStore(algorithm);
      await s.consume(3);
      const reservation = await s.consume(6);
      s.clock.advance(50);
      expect(await s.settle(-4, reservation)).toMatchObject({ allowed: true });
      // 1 left, then 0.5 refilled, then 4 back: 5.5, so 5 whole requests.
      expect(await allowedOf(10, () => s.consume())).toBe(5);
    });

    it('races give-backs of reservations made before the bucket refilled against consumes: never more than the capacity at once', async () => {
      const s = await onStore(algorithm);
      // Round after round, 1.5 s apart (the bucket is full again at the start of each): 2
      // reservations of 3 and 14 requests of 1 fired at once, with the last round's reservations
      // cancelled among them. What the bucket admits in one instant, net of what it gives back,
      // is at most the 10 it holds; and all that is admitted or left counts exactly 10.
      let open: RateLimitDecision[] = [];
      for (let round = 0; round < 5; round++) {
        s.clock.advance(1_500);
        const calls: Promise<{ units: number; decision: RateLimitDecision }>[] = [];
        const reserve = () => calls.push(s.consume(3).then((decision) => ({ units: 3, decision })));
        const consume = () => calls.push(s.consume(1).then((decision) => ({ units: 1, decision })));
        for (let i = 0; i < 7; i++) consume();
        reserve();
        for (const reservation of open) {
          calls.push(s.settle(-3, reservation).then((decision) => ({ units: -3, decision })));
        }
        reserve();
        for (let i = 0; i < 7; i++) consume();
        const answers = await Promise.all(calls);
        const admitted = answers
          .filter((a) => a.units > 0 && a.decision.allowed)
          .reduce((total, a) => total + a.units, 0);
        open = answers.filter((a) => a.units === 3 && a.decision.allowed).map((a) => a.decision);
        const left = await allowedOf(20, () => s.consume());
        expect({ round, admitted, left }).toEqual({ round, admitted: 10 - left, left });
      }
    });

    it('races the same through RateLimitService: reservations cancelled after the bucket refilled free nothing', async () => {
      const clock = new TestClock();
      const limiter = await service(clock);
      const key = `late:${randomUUID()}`;
      const policy = TEN_PER_SECOND(algorithm);
      let open: RateLimitReservation[] = [];
      for (let round = 0; round < 5; round++) {
        clock.advance(1_500);
        const next: RateLimitReservation[] = [];
        // Units each call took: a rejected reservation throws, and a cancel takes nothing.
        const calls: Promise<number>[] = [];
        const consume = () =>
          calls.push(limiter.consume(key, policy).then((d) => (d.allowed ? 1 : 0)));
        const reserve = () =>
          calls.push(
            limiter.reserve(key, policy, 3).then(
              (ticket) => (next.push(ticket), 3),
              () => 0,
            ),
          );
        for (let i = 0; i < 4; i++) consume();
        reserve();
        for (const ticket of open) calls.push(ticket.cancel().then(() => 0));
        reserve();
        for (let i = 0; i < 10; i++) consume();
        const admitted = (await Promise.all(calls)).reduce((a, b) => a + b, 0);
        open = next;
        const left = await allowedOf(20, () => limiter.consume(key, policy));
        expect({ round, admitted, left }).toEqual({ round, admitted: 10 - left, left });
      }
    });
  });
});

describe('late give-backs on Redis stores without a test clock', () => {
  const redis = useRedis('redis');

  it('a reservation cancelled at once gives back all of it, on every bucket', async () => {
    const store = new RedisStore({ client: redis().shared });
    for (const algorithm of BUCKETS) {
      const policy = resolvePolicy(
        { algorithm, period: '1000h', threshold: 10 },
        'late give-backs',
      );
      const key = `late:{${randomUUID()}}`;
      const reservation = await store.consume([key], [policy], [7]);
      expect(reservation).toMatchObject({ allowed: true, remaining: 3 });
      expect(await store.settle([key], [policy], [-7], reservation)).toMatchObject({
        remaining: 10,
      });
    }
  });

  it('reads a key GCRA wrote as one integer (an earlier version) as its arrival time', async () => {
    const clock = new TestClock();
    const store = new RedisStore({ client: redis().shared, clock: clock.now });
    const policy = resolvePolicy(TEN_PER_SECOND('leaky-bucket'), 'late give-backs');
    const key = `late:{${randomUUID()}}`;
    // 5 of 10 in use: empty 0.5 s from now.
    await redis().shared.set(key, String(clock.now() * 1000 + 500_000), 'PX', 10_000);
    expect(await store.consume([key], [policy], [1])).toMatchObject({ remaining: 4 });
    expect(await store.refund!([key], [policy], [3])).toMatchObject({ remaining: 7 });
  });

  it('reads a key GCRA wrote as text (an earlier version), even text as long as its packed state', async () => {
    const clock = new TestClock();
    const store = new RedisStore({ client: redis().shared, clock: clock.now });
    const policy = resolvePolicy(TEN_PER_SECOND('leaky-bucket'), 'late give-backs');
    for (const width of [6, 0]) {
      const key = `late:{${randomUUID()}}`;
      // 5 of 10 in use, written and emptied just now: "<tat> <tat - at> <tat - since> <low> <given>".
      const tat = clock.now() * 1000 + 500_000;
      const low = '500000'.padStart(40 - `${tat} 500000 500000  0`.length, '0');
      const text = `${tat} 500000 500000 ${width === 0 ? low : '500000'} 0`;
      if (width === 0) expect(text).toHaveLength(40);
      await redis().shared.set(key, text, 'PX', 10_000);
      expect(await store.consume([key], [policy], [1])).toMatchObject({ remaining: 4 });
      expect(await store.refund!([key], [policy], [3])).toMatchObject({ remaining: 7 });
      expect(await store.consume([key], [policy], [7])).toMatchObject({
        allowed: true,
        remaining: 0,
      });
      expect(await store.consume([key], [policy], [1])).toMatchObject({ allowed: false });
    }
  });
});
