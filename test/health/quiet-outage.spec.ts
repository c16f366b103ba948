/**
 * An outage that goes quiet: Redis frozen (SIGSTOP, its sockets open and nothing answering), a
 * few decisions answered by the fallback, then no traffic at all. The health indicator is read
 * again well past a second later, while Redis is still frozen, and after SIGCONT, on every client.
 * A server not heard from since its latest failure is down until it answers, however long ago
 * that failure was: the report stays degraded with the same `degradedSince` and the outage's
 * whole `fallbackAnswers`, the check's own probe is what hears Redis come back, and the log has
 * one warning and one recovery line. The fields agree with each other at every read. Then the
 * outage that begins as the application starts without Redis, which ends with its connection line
 * and leaves no breaker open behind it.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import {
  RateLimitHealthIndicator,
  RateLimitService,
  type RedisConnection,
} from '../../lib/index.js';
import { type RateLimitHealthDetails } from '../../lib/health/rate-limit.health.js';
import { createClient } from 'redis';
import { CLIENT_KINDS } from '../support/clients.js';
import { type TestRedis } from '../support/redis-server.js';
import { useRedis } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { CapturingLogger, createLimiterApp, sleep } from '../fault/traffic.js';
import { inTier } from '../support/matrix.js';

// Generous, so that a busy machine's stall is not taken for an outage of its own.
const TIMEOUT_MS = 500;
const POLICY = { period: '1h', threshold: 1_000_000 } as const;

/**
 * What every report must say of itself: degraded exactly while some server is in an outage, and
 * then with its start, its answer and its count; a breaker that is not closed only during one;
 * and for one server, unreachable only while degraded.
 */
function expectCoherent(d: RateLimitHealthDetails): void {
  const shown = JSON.stringify(d);
  if (d.degraded) {
    expect({ shown, failingNodes: d.failingNodes! >= 1 }).toEqual({ shown, failingNodes: true });
    expect(typeof d.degradedSince).toBe('string');
    expect(typeof d.fallback).toBe('string');
    expect(typeof d.fallbackAnswers).toBe('number');
  } else {
    expect({ shown, breaker: d.breaker, failingNodes: d.failingNodes }).toEqual({
      shown,
      breaker: 'closed',
      failingNodes: 0,
    });
    expect({ shown, since: d.degradedSince, fallback: d.fallback, n: d.fallbackAnswers }).toEqual({
      shown,
    });
    expect({ shown, reachable: d.reachable }).toEqual({ shown, reachable: true });
  }
  expect(d.status).toBe(d.degraded && d.fallback === 'deny' ? 'down' : 'up');
}

describe.each(CLIENT_KINDS)('a quiet outage, %s', (kind) => {
  const redis = useRedis('redis');
  let app: INestApplication | undefined;

  afterEach(async () => {
    redis().freeze(false);
    await app?.close();
    app = undefined;
  });

  it('stays degraded until Redis answers, then recovers with one line', async () => {
    const logger = new CapturingLogger();
    const client = (await redis().connect(kind)) as RedisConnection;
    app = await createLimiterApp({ redis: client, timeout: TIMEOUT_MS }, logger);
    const indicator = app.get(RateLimitHealthIndicator);
    const limiter = app.get(RateLimitService);
    const reads: RateLimitHealthDetails[] = [];
    const read = async () => {
      const d = (await indicator.isHealthy('rate-limit'))['rate-limit'];
      reads.push(d);
      expectCoherent(d);
      return d;
    };

    expect(await read()).toMatchObject({ degraded: false, breaker: 'closed', reachable: true });
    redis().freeze(true);
    let frozen: RateLimitHealthDetails;
    try {
      for (let i = 0; i < 3; i++) {
        expect((await limiter.consume(`quiet-${i}`, POLICY)).degraded).toBe('memory');
      }
      const first = await read();
      expect(first).toMatchObject({
        reachable: false,
        degraded: true,
        fallback: 'memory',
        failingNodes: 1,
      });
      // The outage counts from the failure that began it: a first decision this process held
      // back past its deadline (a busy machine) fails alone and is not counted against Redis.
      expect([1, 2, 3]).toContain(first.fallbackAnswers);
      expect(first.breaker).not.toBe('closed');
      // Quiet for longer than an outage takes to end once its server answers again.
      await sleep(1500);
      frozen = await read();
      expect(frozen).toMatchObject({
        reachable: false,
        degraded: true,
        degradedSince: first.degradedSince,
        fallback: 'memory',
        fallbackAnswers: first.fallbackAnswers,
        failingNodes: 1,
      });
      expect(frozen.breaker).not.toBe('closed');
      expect(logger.messages.filter((m) => m.includes('recovered'))).toEqual([]);
    } finally {
      redis().freeze(false);
    }

    // No decision is made: the check's probe is what hears Redis again.
    await waitFor('a recovered report', 15_000, async () => {
      const d = await read();
      return !d.degraded || JSON.stringify(d);
    });
    expect(await read()).toMatchObject({
      reachable: true,
      degraded: false,
      breaker: 'closed',
      failingNodes: 0,
    });
    // Until then, every report was of the same outage.
    const during = reads.filter((d) => d.degraded);
    expect(new Set(during.map((d) => d.degradedSince))).toEqual(new Set([frozen.degradedSince]));
    expect(new Set(during.map((d) => d.fallbackAnswers))).toEqual(
      new Set([frozen.fallbackAnswers]),
    );

    const warnings = logger.warnings.filter((w) => w.includes('rate-limit store failed'));
    const recoveries = logger.messages.filter((m) => m.includes('recovered'));
    expect(warnings).toHaveLength(1);
    expect(recoveries).toHaveLength(1);
    expect(recoveries[0]).toContain('the fallback answered 3 decisions meanwhile');
    // And decisions are shared through Redis again.
    expect((await limiter.consume('quiet-after', POLICY)).degraded).toBeUndefined();
  });
});

/** Ways to hand the module a connection it must open itself, in the background. */
const UNOPENED: Array<[label: string, connect: (redis: TestRedis) => Promise<RedisConnection>]> = [
  ['ioredis from a URL', async (redis) => redis.url],
  [
    'node-redis, handed over unconnected',
    async (redis) =>
      createClient({
        url: redis.url,
        socket: { reconnectStrategy: (attempt: number) => Math.min(50 * (attempt + 1), 250) },
      }) as unknown as RedisConnection,
  ],
  [
    'glide with lazyConnect',
    (redis) => redis.connect('glide', { lazyConnect: true }) as Promise<RedisConnection>,
  ],
];

describe.each(inTier(UNOPENED))('an outage from startup, %s', (_label, connect) => {
  const redis = useRedis('redis');
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('ends with its connection line, the breaker closed with it', async () => {
    await redis().kill('SIGKILL');
    const logger = new CapturingLogger();
    app = await createLimiterApp({ redis: await connect(redis()), timeout: TIMEOUT_MS }, logger);
    const indicator = app.get(RateLimitHealthIndicator);
    const limiter = app.get(RateLimitService);
    const read = async () => {
      const d = (await indicator.isHealthy('rate-limit'))['rate-limit'];
      expectCoherent(d);
      return d;
    };
    // Enough failures to open the breaker.
    for (let i = 0; i < 3; i++) {
      expect((await limiter.consume(`boot-${i}`, POLICY)).degraded).toBe('memory');
    }
    const down = await read();
    expect(down).toMatchObject({ reachable: false, degraded: true, fallbackAnswers: 3 });

    await redis().restart();
    // No decision is made: the connection, or the check's probe, ends the outage.
    await waitFor('a recovered report', 15_000, async () => {
      const d = await read();
      return !d.degraded || JSON.stringify(d);
    });
    expect(await read()).toMatchObject({ degraded: false, breaker: 'closed', failingNodes: 0 });
    expect(logger.warnings.filter((w) => w.startsWith('Redis is unreachable'))).toHaveLength(1);
    const connected = logger.messages.filter((m) => m.startsWith('Redis connected after'));
    expect(connected).toHaveLength(1);
    expect(connected[0]).toContain('the fallback answered 3 decisions meanwhile');
    expect(logger.messages.filter((m) => m.includes('recovered'))).toEqual([]);
    await waitFor('a decision in Redis', 10_000, async () => {
      const decision = await limiter.consume('boot-after', POLICY);
      return decision.degraded === undefined || JSON.stringify(decision);
    });
  });
});
