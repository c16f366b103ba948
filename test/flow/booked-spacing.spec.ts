/**
 * What booking ahead promises with `strict: false` (slots at the policy's own spacing; strict
 * spacing is in strict-spacing.spec.ts), measured: calls booked on one GCRA key from two module instances
 * on one real Redis start no earlier than their slots, and slots are one interval apart on
 * Redis's clock. So two starts are never closer than one interval minus how late the earlier of
 * them started: lateness (the reply's way back, a busy event loop) is allowed, earliness is not.
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
import { CLIENT_KINDS } from '../support/clients.js';
import { useRedis } from '../support/stores.js';

const INTERVAL_MS = 100;
const SPACED: RateLimitPolicy = {
  algorithm: 'leaky-bucket',
  period: '1s',
  threshold: 1000 / INTERVAL_MS,
  burst: 1,
};
const CALLS = 30;

/** This process's clock, as wall time in fractional ms: what a start is measured on. */
const now = () => performance.timeOrigin + performance.now();

describe.each(CLIENT_KINDS)('booked calls on %s, two instances', (client) => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function instance(prefix: string): Promise<RateLimitService> {
    const ref = await Test.createTestingModule({
      imports: [
        // 5 s, so that every slot is Redis's: on a busy machine a decision past the 100 ms default
        // is the fallback's, which books on this instance's own clock.
        RateLimitModule.forRoot({
          redis: await redis().connect(client),
          keyPrefix: prefix,
          timeout: 5000,
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    return app.get(RateLimitService);
  }

  /**
   * The most Redis's clock can be ahead of this process's, in ms: Redis read `TIME` after `sent`.
   * Subtracting it from a Redis time gives the earliest this process's clock could have shown
   * at that moment.
   */
  async function redisAheadAtMost(): Promise<number> {
    const sent = now();
    const [seconds, micros] = await redis().shared.time();
    return Number(seconds) * 1000 + Number(micros) / 1000 - sent;
  }

  it(`starts ${CALLS} run() calls at 10/s no earlier than their slots, whatever their lateness`, async () => {
    const prefix = `s-${randomUUID().slice(0, 8)}`;
    const [a, b] = [await instance(prefix), await instance(prefix)];
    const key = `partner:${randomUUID()}`;
    const starts: number[] = [];
    const call = (service: RateLimitService) =>
      service.run(key, SPACED, () => starts.push(now()), { maxWait: '10s', strict: false });

    // Redis's clock before the first decision: the first slot is no earlier, and each booking
    // after it is at least one interval past the one before (a key that drained and expired in
    // between starts again no earlier than its last slot), so `firstSlotMs + k * INTERVAL_MS`
    // is a lower bound of the k-th slot. Read from TIME, not from the key: on a busy machine the
    // key may have drained and expired before a read of it.
    const [seconds, micros] = await redis().shared.time();
    const firstSlotMs = Number(seconds) * 1000 + Number(micros) / 1000;
    const aheadBefore = await redisAheadAtMost();

    await call(a);
    await Promise.all(Array.from({ length: CALLS - 1 }, (_, i) => call(i % 2 ? a : b)));
    const ahead = Math.max(aheadBefore, await redisAheadAtMost());

    expect(starts).toHaveLength(CALLS);
    const booked = [...starts].sort((x, y) => x - y);
    // The k-th earliest start against the k-th slot: each call starts at or after its own slot,
    // so the k-th earliest start is no earlier than the k-th slot.
    const lateness = booked.map((start, k) => start - (firstSlotMs + k * INTERVAL_MS - ahead));
    for (const late of lateness) expect(late).toBeGreaterThanOrEqual(0);
    // Hence the documented bound on gaps: one interval less the earlier call's lateness.
    for (let k = 1; k < booked.length; k++) {
      expect(booked[k] - booked[k - 1]).toBeGreaterThanOrEqual(INTERVAL_MS - lateness[k - 1]);
    }
    // Not a vacuous check: the calls did wait for their slots, not for a later moment.
    expect(booked[booked.length - 1] - booked[0]).toBeGreaterThanOrEqual(
      (CALLS - 1) * INTERVAL_MS - lateness[0],
    );
    if (process.env.FLOW_SPACING_REPORT) {
      const gaps = booked.slice(1).map((t, i) => t - booked[i]);
      console.log(
        client,
        `gap min ${Math.min(...gaps).toFixed(2)} ms, lateness min ${Math.min(...lateness).toFixed(2)} max ${Math.max(...lateness).toFixed(2)} ms, clock slack ${(ahead - aheadBefore).toFixed(3)}`,
      );
    }
  });
});

describe('booked calls on the memory store, two instances', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('starts no call before its slot, to the microsecond, when the store reads the same clock', async () => {
    // The store's clock is this process's: a slot and a start compare with no tolerance at all.
    const reads: number[] = [];
    const store = new MemoryStore({
      clock: () => {
        const t = performance.now();
        reads.push(t);
        return t;
      },
    });
    const services: RateLimitService[] = [];
    for (let i = 0; i < 2; i++) {
      const ref = await Test.createTestingModule({
        imports: [RateLimitModule.forRoot({ store, keyPrefix: 'm' })],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
      services.push(app.get(RateLimitService));
    }
    // 137 a second: an interval of 7300 µs (7299.27, rounded up), never a whole number of ms,
    // so a timer that fires early by a fraction of a millisecond would start a call too soon.
    const policy: RateLimitPolicy = { ...SPACED, threshold: 137 };
    const intervalUs = Math.ceil(1_000_000 / 137);
    const starts: number[] = [];
    const key = randomUUID();
    reads.length = 0;
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        services[i % 2].run(key, policy, () => starts.push(performance.now()), {
          maxWait: '2s',
          strict: false,
        }),
      ),
    );
    // The first decision's clock read is the first slot; the others follow one interval apart,
    // or later.
    const firstUs = Math.floor(reads[0] * 1000);
    starts.sort((x, y) => x - y);
    const early = starts
      .map((start, k) => ({ k, byUs: firstUs + k * intervalUs - start * 1000 }))
      .filter((e) => e.byUs > 0);
    expect(early).toEqual([]);
  });
});
