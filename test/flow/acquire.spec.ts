/**
 * RateLimitService.acquire and run across several module instances sharing one store: real
 * Redis through both client libraries, and one memory store shared within the process. Times are
 * real; assertions bound them from below (spacing) and only loosely from above.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  MemoryStore,
  RateLimitException,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
  RateLimitStore,
  RedisStore,
} from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { type RateLimitDecision } from '../../lib/store-contract/store.interface.js';
import { monotonicClock } from '../../lib/stores/clock.js';
import { arrivalOf, slotAtOf } from '../../lib/stores/decision.js';
import { type ClientKind } from '../support/clients.js';
import { primaryOf, STORE_TARGETS, useRedis } from '../support/stores.js';

type Target = 'memory' | ClientKind;
const TARGETS: Target[] = STORE_TARGETS;
const SPACED: RateLimitPolicy = {
  algorithm: 'leaky-bucket',
  period: '1s',
  threshold: 10,
  burst: 1,
};
const INTERVAL_MS = 100;
// A booked slot is read off its decision as the store's time plus `waitMs`, which is rounded up
// to the millisecond: each slot so read is late by less than this.
const WAIT_ROUNDING_MS = 1;
// How late an admission may be noticed after its slot on a busy machine: generous, since
// lateness is not what this test is about.
const LATE_BOUND_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(TARGETS)('acquire and run on %s, two instances', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  // Reservations the instances' stores were asked to make.
  let reserves = 0;
  // The allowing decisions of every reservation the stores made: the slots they booked.
  const bookings: RateLimitDecision[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /** Two module instances on one store, as two processes behind a load balancer would be. */
  async function instances(options: RateLimitRootOptions = {}): Promise<RateLimitService[]> {
    const shared = target === 'memory' ? new MemoryStore() : undefined;
    const prefix = `f-${randomUUID().slice(0, 8)}`;
    const services: RateLimitService[] = [];
    for (let i = 0; i < 2; i++) {
      const store = shared
        ? { store: shared }
        : { redis: await redis().connect(target as ClientKind) };
      const ref = await Test.createTestingModule({
        // What the store books is under test, not the fallback: a busy machine's slow reply gets
        // 5 s rather than the 100 ms default, after which memory would answer in Redis's place.
        imports: [
          RateLimitModule.forRoot({ ...store, keyPrefix: prefix, timeout: 5000, ...options }),
        ],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
      // Counted at the store, since decisions share Redis calls when they go out in batches. The
      // memory store the instances share is watched once.
      if (!shared || i === 0) {
        const store = primaryOf(app.get(RateLimitStore)) as RedisStore | MemoryStore;
        const execute = store.execute.bind(store);
        store.execute = async (call) => {
          if (call.op !== 'reserve') return execute(call);
          reserves++;
          const decision = await execute(call);
          if (decision.allowed) bookings.push(decision);
          return decision;
        };
      }
      services.push(app.get(RateLimitService));
    }
    return services;
  }

  // With strict: false, the slots are the policy's own spacing; strict spacing (the default) is in
  // strict-spacing.spec.ts.
  it('admits 15 + 15 acquires on one GCRA key at its spacing, one decision each', async () => {
    const [a, b] = await instances();
    const key = `partner:${randomUUID()}`;
    const before = reserves;
    bookings.length = 0;
    const admitted: number[] = [];
    const acquire = async (service: RateLimitService) => {
      const permit = await service.acquire(key, SPACED, { maxWait: '10s', strict: false });
      admitted.push(monotonicClock());
      await permit.release();
    };
    await Promise.all(Array.from({ length: 30 }, (_, i) => acquire(i % 2 === 0 ? a : b)));
    expect(admitted).toHaveLength(30);
    expect(bookings).toHaveLength(30);

    // The spacing is what the store booked, on its own clock: each slot is the later of when its
    // reservation arrived and one interval after the slot before, never sooner (the spacing) and
    // never later (nothing pushed out). When an admission is noticed is the event loop's business,
    // so the gaps between admissions are not what is promised.
    const booked = bookings
      .map((d) => {
        const arrived = arrivalOf(d)! / 1000;
        return { arrived, slot: arrived + (d.waitMs ?? 0) };
      })
      .sort((x, y) => x.slot - y.slot);
    const gaps = booked.slice(1).map((s, k) => s.slot - booked[k].slot);
    booked.slice(1).forEach(({ arrived, slot }, k) => {
      const next = Math.max(arrived, booked[k].slot + INTERVAL_MS);
      expect(slot).toBeGreaterThanOrEqual(next - WAIT_ROUNDING_MS);
      expect(slot).toBeLessThanOrEqual(next + WAIT_ROUNDING_MS);
    });
    // All were sent at once, so they queued: the typical gap is the interval itself.
    const median = [...gaps].sort((x, y) => x - y)[14];
    expect(Math.abs(median - INTERVAL_MS)).toBeLessThanOrEqual(WAIT_ROUNDING_MS);

    // No admission comes before its slot, placed on this process's clock. Each admission is at or
    // after its own slot, so the k-th earliest admission is no earlier than the k-th slot. And the
    // last is not held long past its slot.
    const slots = bookings.map((d) => slotAtOf(d)!).sort((x, y) => x - y);
    admitted.sort((x, y) => x - y);
    admitted.forEach((t, k) => expect(t).toBeGreaterThanOrEqual(slots[k]));
    expect(admitted[29] - slots[29]).toBeLessThanOrEqual(LATE_BOUND_MS);
    if (process.env.FLOW_SPACING_REPORT) {
      const late = admitted.map((t, k) => t - slots[k]);
      console.log(
        target,
        'booked gaps ms: min',
        Math.min(...gaps),
        'median',
        median,
        'max',
        Math.max(...gaps),
        'admitted late ms: max',
        Math.max(...late),
      );
    }
    expect(reserves - before).toBe(30);
  });

  it('rejects at once a wait longer than maxWait, with its retry time, booking nothing', async () => {
    const [a, b] = await instances();
    const key = `partner:${randomUUID()}`;
    await a.acquire(key, SPACED);
    // Booked 100, 200 and 300 ms ahead; the next free slot is then 400 ms away, far enough past
    // maxWait that a busy machine's late timer leaves it so.
    const booked = [0, 1, 2].map(() => b.acquire(key, SPACED, { maxWait: '1s' }));
    await sleep(20);
    const before = await a.peek(key, SPACED);
    const started = performance.now();
    const error = await b.acquire(key, SPACED, { maxWait: '150ms' }).catch((e: unknown) => e);
    const answeredAfter = performance.now() - started;
    expect(error).toBeInstanceOf(RateLimitException);
    const { retryAfterMs } = error as RateLimitException;
    // At once: answered before the slot it was refused, where a wait would have ended.
    expect(answeredAfter).toBeLessThan(retryAfterMs);
    // The wait to the next free slot: beyond maxWait, and no longer than it was a moment before.
    expect(retryAfterMs).toBeGreaterThan(150);
    expect(retryAfterMs).toBeLessThanOrEqual(before.retryAfterMs);
    const after = await a.peek(key, SPACED);
    expect(after).toMatchObject({ allowed: false, remaining: before.remaining });
    expect(after.retryAfterMs).toBeLessThanOrEqual(before.retryAfterMs);
    expect((await booked[0]).waitMs).toBeGreaterThan(50);
    await Promise.all(booked);
    // A cost no policy can ever allow is refused at once too.
    await expect(a.acquire(key, SPACED, { cost: 2 })).rejects.toMatchObject({
      retryAfterMs: Infinity,
    });
  });

  it('gives a booked slot back when the wait is aborted', async () => {
    const [a, b] = await instances();
    const key = `partner:${randomUUID()}`;
    await a.acquire(key, SPACED);
    const controller = new AbortController();
    const waiting = b.acquire(key, SPACED, { signal: controller.signal });
    await sleep(30);
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    // The aborted call's slot is the next caller's: it waits one interval, not two.
    const next = await a.acquire(key, SPACED);
    expect(next.waitMs ?? 0).toBeLessThanOrEqual(100);
  });

  it('runs 6 calls of 200 ms, at most 2 at once across both instances, with and without waiting', async () => {
    const [a, b] = await instances();
    const key = `exports:${randomUUID()}`;
    const policy: RateLimitPolicy = { algorithm: 'concurrency', threshold: 2, period: '10s' };
    let running = 0;
    let most = 0;
    const job = async () => {
      running++;
      most = Math.max(most, running);
      await sleep(200);
      running--;
      return 'done';
    };
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).run(key, policy, job, { maxWait: '5s' })),
    );
    expect(results).toEqual(Array(6).fill('done'));
    expect(most).toBe(2);

    const holding = [a.run(key, policy, job), b.run(key, policy, job)];
    await sleep(20);
    // maxWait 0: refused at once. A run that waited would get a lease once one is freed (200 ms
    // on) and resolve 'done' rather than reject, however slow the machine.
    await expect(a.run(key, policy, job, { maxWait: 0 })).rejects.toMatchObject({
      retryAfterMs: 1000,
    });
    await Promise.all(holding);
    // run() frees the lease whether fn resolves or throws.
    await expect(a.run(key, policy, () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    await expect(a.run(key, policy, () => Promise.reject(new Error('boom')))).rejects.toThrow(
      'boom',
    );
    expect((await b.peek(key, policy)).remaining).toBe(1);
  });

  it('keeps a lease held three times longer than its period', async () => {
    const [a, b] = await instances();
    const key = `exports:${randomUUID()}`;
    const policy: RateLimitPolicy = { algorithm: 'concurrency', threshold: 1, period: '1s' };
    const permit = await a.acquire(key, policy);
    const rejected: boolean[] = [];
    for (let t = 0; t < 3000; t += 250) {
      await sleep(250);
      rejected.push(
        await b.acquire(key, policy, { maxWait: 0 }).then(
          () => false,
          () => true,
        ),
      );
    }
    expect(rejected.every(Boolean)).toBe(true);
    await permit.release();
    const next = await b.acquire(key, policy, { maxWait: 0 });
    await next.release();
  });
});
