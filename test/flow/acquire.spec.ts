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
// Slots are booked exactly; an admission is observed when its timer fires, which a busy event
// loop (two cores, several test workers) can delay by a few ms, shrinking the next gap.
const CLOCK_TOLERANCE_MS = 10;
// How late the last admission may be noticed on a busy machine: generous, since lateness is not
// what this test is about.
const LATE_BOUND_MS = 500;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(TARGETS)('acquire and run on %s, two instances', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  // Decisions the instances' Redis stores were asked to make, by operation.
  let reserves = 0;
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
        imports: [RateLimitModule.forRoot({ ...store, keyPrefix: prefix, ...options })],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      await app.init();
      apps.push(app);
      if (!shared) {
        // Counted at the store, since decisions share Redis calls when they go out in batches.
        const store = primaryOf(app.get(RateLimitStore)) as RedisStore;
        const execute = store.execute.bind(store);
        store.execute = (call) => {
          if (call.op === 'reserve') reserves++;
          return execute(call);
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
    const admitted: number[] = [];
    const start = performance.now();
    const acquire = async (service: RateLimitService) => {
      const permit = await service.acquire(key, SPACED, { maxWait: '10s', strict: false });
      admitted.push(performance.now());
      await permit.release();
    };
    await Promise.all(Array.from({ length: 30 }, (_, i) => acquire(i % 2 === 0 ? a : b)));
    expect(admitted).toHaveLength(30);
    admitted.sort((x, y) => x - y);
    const gaps = admitted.slice(1).map((t, i) => t - admitted[i]);
    // No admission comes before its slot: the k-th slot is k intervals after the first decision,
    // which came after the start. An admission noticed late (a busy event loop: 45 ms was seen
    // with every suite running) is no fault, so each gap is not bounded from below on its own.
    admitted.forEach((t, k) =>
      expect(t - start).toBeGreaterThanOrEqual(100 * k - CLOCK_TOLERANCE_MS),
    );
    // The typical gap is the interval, and the last slot is not pushed out.
    const median = [...gaps].sort((x, y) => x - y)[14];
    expect(Math.abs(median - 100)).toBeLessThanOrEqual(CLOCK_TOLERANCE_MS / 2);
    expect(admitted[29] - start).toBeLessThanOrEqual(2900 + LATE_BOUND_MS);
    if (process.env.FLOW_SPACING_REPORT) {
      console.log(
        target,
        'gaps ms: min',
        Math.min(...gaps),
        'median',
        median,
        'max',
        Math.max(...gaps),
      );
    }
    if (target !== 'memory') expect(reserves - before).toBe(30);
  });

  it('rejects at once a wait longer than maxWait, with its retry time, booking nothing', async () => {
    const [a, b] = await instances();
    const key = `partner:${randomUUID()}`;
    await a.acquire(key, SPACED);
    // Booked 100 ms ahead; the next free slot is then 200 ms away.
    const booked = b.acquire(key, SPACED, { maxWait: '1s' });
    await sleep(20);
    const before = await a.peek(key, SPACED);
    const started = performance.now();
    const error = await b.acquire(key, SPACED, { maxWait: '150ms' }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(100);
    expect(error).toBeInstanceOf(RateLimitException);
    const { retryAfterMs } = error as RateLimitException;
    expect(retryAfterMs).toBeGreaterThan(150);
    expect(retryAfterMs).toBeLessThanOrEqual(200);
    const after = await a.peek(key, SPACED);
    expect(after).toMatchObject({ allowed: false, remaining: before.remaining });
    expect(after.retryAfterMs).toBeLessThanOrEqual(before.retryAfterMs);
    expect((await booked).waitMs).toBeGreaterThan(50);
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
    const started = performance.now();
    await expect(a.run(key, policy, job, { maxWait: 0 })).rejects.toMatchObject({
      retryAfterMs: 1000,
    });
    expect(performance.now() - started).toBeLessThan(100);
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
