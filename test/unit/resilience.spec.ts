import { describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { MemoryStore, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { StoreTimeoutError } from '../../lib/stores/resilience/deadlines.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { CircuitBreaker } from '../../lib/stores/resilience/circuit-breaker.js';
import { Deadlines } from '../../lib/stores/resilience/deadlines.js';
import { NodeHealthMap } from '../../lib/stores/resilience/node-health-map.js';
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
    // Within a tick of the deadline, as the timer goes; a busy machine may hold that timer back
    // by tens of milliseconds, which is no part of what is promised.
    expect(waited).toBeLessThan(40 + deadlines.tickMs + 500);
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

describe('per-node health', () => {
  class Lines {
    readonly warnings: string[] = [];
    readonly logs: string[] = [];
    warn = (m: string) => void this.warnings.push(m);
    log = (m: string) => void this.logs.push(m);
  }
  const boom = new Error('boom');

  it('a failure does not count against a node that answered a decision sent after it', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const a = health.of('a:1', 0);
    for (let sent = 1; sent <= 5; sent++) {
      health.succeeded(a, sent + 1, sent);
      health.failed(a, sent, sent, boom, false);
    }
    expect(a.breaker.open).toBe(false);
    expect(lines.warnings).toEqual([]);
    // Nothing sent later was answered: these count, and the third opens the breaker.
    for (let sent = 10; sent < 13; sent++) health.failed(a, sent, sent, boom, false);
    expect(a.breaker.open).toBe(true);
    expect(lines.warnings).toEqual([
      'The rate-limit store failed on node a:1 (Error: boom); limiting per instance in memory until it recovers',
    ]);
    expect(health.of('b:2', 13).breaker.open).toBe(false);
  });

  it('a moving slot never opens a breaker, and frees the probe it took', () => {
    const health = new NodeHealthMap('memory', new Lines());
    const a = health.of('a:1', 0);
    for (let sent = 1; sent <= 3; sent++) health.failed(a, sent, sent, boom, false);
    expect(a.breaker.allow(1000)).toBe(true);
    health.failed(a, 4, 1000, new Error('TRYAGAIN'), true);
    expect(a.breaker.allow(1000)).toBe(true);
  });

  it('logs one warning and one recovery however failures and successes alternate', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('deny', lines);
    const a = health.of('', 0);
    let sent = 0;
    for (let now = 0; now < 3000; now += 10) {
      health.failed(a, ++sent, now, boom, false);
      a.fallbackAnswers++;
      health.succeeded(a, ++sent, now + 5);
    }
    expect(lines.warnings).toEqual([
      'The rate-limit store failed (Error: boom); denying every request with 503 until it recovers',
    ]);
    expect(lines.logs).toEqual([]);
    expect(health.degraded).toBe(true);
    // The last failure was at 2990 ms.
    health.succeeded(a, ++sent, 2990 + 999);
    expect(lines.logs).toEqual([]);
    health.succeeded(a, sent + 1, 2990 + 1000);
    expect(lines.logs).toEqual([
      'The rate-limit store recovered after 3.0s; the fallback answered 300 decisions meanwhile',
    ]);
    expect(health.degraded).toBe(false);
  });

  it('lets go of a node in an outage once no decision has gone to it for 10 s', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const gone = health.of('a:1', 0);
    health.failed(gone, 1, 0, boom, false);
    const other = health.of('b:2', 0);
    health.succeeded(other, 2, 9999);
    expect(health.degraded).toBe(true);
    health.succeeded(other, 3, 10_000);
    expect(health.degraded).toBe(false);
    expect(lines.logs).toEqual([
      'The rate-limit store has sent no decision to node a:1 for 10s; the fallback answered 0 decisions for it',
    ]);
  });

  it('lets go of an idle node only once its keys are decided elsewhere, never of one that still decides them', () => {
    const lines = new Lines();
    const moved = new Set<string>();
    const health = new NodeHealthMap('memory', lines, undefined, (node) => !moved.has(node.name));
    const hung = health.of('a:1', 0);
    health.failed(hung, 1, 0, boom, false);
    const other = health.of('b:2', 0);
    health.succeeded(other, 2, 60_000);
    // No decision went to it for a minute, but its keys are still its own: it has not answered.
    expect(health.degraded).toBe(true);
    moved.add('a:1');
    health.succeeded(other, 3, 60_001);
    expect(health.degraded).toBe(false);
    expect(lines.logs).toEqual([
      'The rate-limit store has sent no decision to node a:1 for 10s; the fallback answered 0 decisions for it',
    ]);
  });

  // Every way an outage ends leaves its breaker closed: a report never shows an outage over
  // behind a breaker that still keeps decisions from its server.
  it('closes the breaker of a node it lets go, and of the unnamed node another one outlived', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const unnamed = health.of('', 0);
    for (let sent = 1; sent <= 3; sent++) health.failed(unnamed, sent, sent, boom, false);
    const gone = health.of('a:1', 10);
    for (let sent = 4; sent <= 6; sent++) health.failed(gone, sent, 10, boom, false);
    expect([unnamed.breaker.state, gone.breaker.state]).toEqual(['open', 'open']);
    health.succeeded(health.of('b:2', 10_010), 7, 10_010);
    expect([unnamed.breaker.state, gone.breaker.state]).toEqual(['closed', 'closed']);
    expect(health.degraded).toBe(false);
    expect(lines.warnings).toHaveLength(2);
    expect(lines.logs).toHaveLength(2);
  });

  it('keeps a node that has not answered since its failure in its outage, however long ago', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const a = health.of('', 0);
    health.failed(a, 1, 0, boom, false);
    expect(health.degraded).toBe(true);
    // An answer a minute later, and only then, ends it.
    health.succeeded(a, 2, 60_000);
    expect(health.degraded).toBe(false);
    expect(lines.logs).toEqual([
      'The rate-limit store recovered after 60.0s; the fallback answered 0 decisions meanwhile',
    ]);
  });

  it('ends the startup outage with one connection line, and closes its breaker', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const a = health.of('', 0);
    health.unreachableAtStart(a, 0, 'connect ECONNREFUSED');
    for (let sent = 1; sent <= 3; sent++) {
      health.failed(a, sent, sent * 100, boom, false);
      a.fallbackAnswers++;
    }
    expect(a.breaker.state).toBe('open');
    health.connected(5000);
    expect([a.breaker.state, health.degraded]).toEqual(['closed', false]);
    health.succeeded(a, 4, 5001);
    health.connected(6000);
    expect(lines.warnings).toHaveLength(1);
    expect(lines.logs).toEqual([
      'Redis connected after 5.0s: rate limits are shared through Redis from now on; the fallback answered 3 decisions meanwhile',
    ]);
  });

  it('ends a startup outage that an answer ends first with the connection line, once', () => {
    const lines = new Lines();
    const health = new NodeHealthMap('memory', lines);
    const a = health.of('', 0);
    health.unreachableAtStart(a, 0, 'connect ECONNREFUSED');
    health.succeeded(a, 1, 2000);
    health.connected(2100);
    expect(lines.logs).toEqual([
      'Redis connected after 2.0s: rate limits are shared through Redis from now on; the fallback answered 0 decisions meanwhile',
    ]);
  });
});
