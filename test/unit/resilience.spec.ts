import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import {
  MemoryStore,
  RateLimitModule,
  type RateLimitModuleOptions,
  StoreTimeoutError,
} from '../../lib/index.js';
import { resolvePolicy } from '../../lib/rate-limit.policy.js';
import { CircuitBreaker } from '../../lib/stores/circuit-breaker.js';
import { Deadlines } from '../../lib/stores/deadlines.js';
import { TestClock } from '../support/stores.js';

const never = () => new Promise<never>(() => {});

describe('circuit breaker', () => {
  it('opens after three failures in a row, lets one probe through after the back-off, and closes on success', () => {
    const breaker = new CircuitBreaker(3, 50, 250);
    breaker.failure(0);
    breaker.failure(1);
    expect(breaker.allow(2)).toBe(true);
    breaker.failure(2);
    expect(breaker.open).toBe(true);
    expect(breaker.allow(10)).toBe(false);
    expect(breaker.waitMs(10)).toBe(42);
    expect(breaker.allow(52)).toBe(true);
    expect(breaker.allow(52)).toBe(false);
    breaker.success();
    expect(breaker.open).toBe(false);
    expect(breaker.allow(53)).toBe(true);
  });

  it('doubles the back-off after each failed probe, up to its cap', () => {
    const breaker = new CircuitBreaker(1, 50, 250);
    breaker.failure(0);
    const waits: number[] = [];
    let now = 0;
    for (let i = 0; i < 5; i++) {
      now += breaker.waitMs(now);
      expect(breaker.allow(now)).toBe(true);
      breaker.failure(now);
      waits.push(breaker.waitMs(now));
    }
    expect(waits).toEqual([100, 200, 250, 250, 250]);
  });
});

describe('deadlines', () => {
  it('rejects a call that outlives the timeout with StoreTimeoutError, soon after the deadline', async () => {
    const deadlines = new Deadlines(40);
    const started = performance.now();
    await expect(deadlines.race(never())).rejects.toBeInstanceOf(StoreTimeoutError);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(40);
    expect(waited).toBeLessThan(40 + deadlines.tickMs + 50);
  });

  it('passes results and errors through unchanged, and keeps no timer once nothing is in flight', async () => {
    const deadlines = new Deadlines(1000);
    expect(deadlines.ticking).toBe(false);
    await expect(deadlines.race(Promise.resolve(7))).resolves.toBe(7);
    await expect(deadlines.race(Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(deadlines.ticking).toBe(true);
    await new Promise((r) => setTimeout(r, deadlines.tickMs * 2 + 10));
    expect(deadlines.ticking).toBe(false);
  });

  it('tells onLate the value of a call that resolves after its deadline, and only then', async () => {
    const deadlines = new Deadlines(20);
    const late: number[] = [];
    let answer!: (value: number) => void;
    const slow = new Promise<number>((resolve) => (answer = resolve));
    await expect(deadlines.race(slow, (value) => late.push(value))).rejects.toBeInstanceOf(
      StoreTimeoutError,
    );
    expect(late).toEqual([]);
    answer(7);
    await slow;
    expect(late).toEqual([7]);
    await expect(deadlines.race(Promise.resolve(8), (value) => late.push(value))).resolves.toBe(8);
    expect(late).toEqual([7]);
  });

  it('expires many calls in flight with its one shared interval', async () => {
    const deadlines = new Deadlines(30);
    const calls = Array.from({ length: 500 }, () =>
      deadlines.race(never()).catch((e: unknown) => e),
    );
    expect(deadlines.ticking).toBe(true);
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((e) => e instanceof StoreTimeoutError)).toBe(true);
  });
});

describe('memory store bound', () => {
  it('holds at most maxKeys keys over 10^6 distinct ones, dropping the least recently written', async () => {
    const clock = new TestClock();
    const store = new MemoryStore({ clock: clock.now, maxKeys: 10_000 });
    const policy = resolvePolicy({ period: '1h', threshold: 5, algorithm: 'leaky-bucket' }, 'test');
    const policies = [policy];
    const costs = [1];
    await store.consume(['kept'], policies, costs);
    // The memory store decides synchronously; only the answers are promises, unneeded here.
    for (let i = 0; i < 1_000_000; i++) {
      void store.consume([`k${i}`], policies, costs);
      // Touch one key now and then: recently written keys survive the bound.
      if (i % 5000 === 0) void store.consume(['kept'], policies, costs);
    }
    expect(store.size).toBeLessThanOrEqual(10_000);
    const kept = await store.consume(['kept'], policies, costs);
    expect(kept.remaining).toBeLessThan(4);
    const early = await store.consume(['k0'], policies, costs);
    expect(early.remaining).toBe(4);
  });
});

describe('resilience options', () => {
  it.each<[RateLimitModuleOptions, RegExp]>([
    [{ timeout: 0 }, /timeout must be a whole number of ms from 1 to 60000, got 0/],
    [{ timeout: 2.5 }, /timeout must be/],
    [
      { onStoreError: 'retry' as never },
      /onStoreError must be one of memory, allow, deny, or a function returning one, got "retry"/,
    ],
    [{ maxMemoryKeys: -1 }, /maxMemoryKeys must be a positive integer, got -1/],
    [
      { maxMemoryBytes: 0 },
      /maxMemoryBytes must be a whole number of bytes from 1 to \d+ \(this process's heap limit\), got 0/,
    ],
    [{ maxMemoryBytes: '1gb' as never }, /maxMemoryBytes must be a whole number of bytes/],
    [{ blockCache: 'yes' as never }, /blockCache must be true or false, got "yes"/],
    [{ onDecision: 'log' as never }, /onDecision must be a function, got "log"/],
    [{ onLimited: 1 as never }, /onLimited must be a function, got 1/],
    [{ skipIf: true as never }, /skipIf must be a function, got true/],
  ])('rejects %p at bootstrap', async (options, message) => {
    await expect(
      Test.createTestingModule({ imports: [RateLimitModule.forRoot(options)] }).compile(),
    ).rejects.toThrow(message);
  });
});
