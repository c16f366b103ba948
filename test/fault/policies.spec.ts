/**
 * What a client sees while Redis is down, for each `onStoreError` policy, over HTTP through a real
 * Nest app; and the bounded wait with a client the application passed in, queueing and all.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import request from 'supertest';
import { RateLimit, RateLimitModule, RateLimitService } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { STORE_UNAVAILABLE_MESSAGE } from '../../lib/rate-limit.exception.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { sleep } from './traffic.js';

@Controller()
class LimitedController {
  @RateLimit({ period: '1h', threshold: 3 })
  @Get('limited')
  limited() {
    return 'ok';
  }
}

describe('onStoreError while Redis is down', () => {
  let redis: TestRedis;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    // Every test leaves the server running for the next one.
    await redis
      .client()
      .ping()
      .catch(() => redis.restart());
  });
  afterAll(async () => {
    await redis.stop();
  });

  async function boot(options: RateLimitRootOptions) {
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ keyPrefix: `p${Date.now()}`, timeout: 100, ...options })],
      controllers: [LimitedController],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    return app;
  }
  const hit = (a: INestApplication) => request(a.getHttpServer()).get('/limited');

  it("'deny' answers 503 with Retry-After, then resumes shared limits once Redis is back", async () => {
    const a = await boot({ redis: redis.url, onStoreError: 'deny' });
    expect((await hit(a)).status).toBe(200);
    await redis.kill();
    const denied = await hit(a);
    expect(denied.status).toBe(503);
    expect(denied.body).toEqual({
      statusCode: 503,
      message: STORE_UNAVAILABLE_MESSAGE,
      error: 'Service Unavailable',
    });
    expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(denied.headers['ratelimit']).toBeUndefined();

    await redis.restart();
    const back = performance.now();
    let res = await hit(a);
    while (res.status === 503 && performance.now() - back < 3000) {
      await sleep(20);
      res = await hit(a);
    }
    expect(performance.now() - back).toBeLessThan(1000);
    // The server came back empty: the shared count starts again at this request.
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit']).toBe('"3-per-1h";r=2;t=3600');
  });

  it("'allow' lets every request through without rate-limit headers, beyond the threshold", async () => {
    const a = await boot({ redis: redis.url, onStoreError: 'allow' });
    await redis.kill();
    const responses = [];
    for (let i = 0; i < 6; i++) responses.push(await hit(a));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(responses.every((r) => r.headers['ratelimit'] === undefined)).toBe(true);
  });

  it("'memory' (the default) keeps limiting per instance, with headers", async () => {
    const a = await boot({ redis: redis.url });
    await redis.kill();
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await hit(a));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(responses[0].headers['ratelimit']).toBe('"3-per-1h";r=2;t=3600');
    expect(Number(responses[3].headers['retry-after'])).toBeGreaterThan(3500);
  });

  it('a function onStoreError is told each error and picks the answer; if it throws, memory answers', async () => {
    const errors: Error[] = [];
    let choice: () => 'deny' | 'allow' | undefined = () => 'deny';
    const a = await boot({
      redis: redis.url,
      onStoreError: (error) => {
        errors.push(error);
        return choice();
      },
    });
    expect((await hit(a)).status).toBe(200);
    expect(errors).toEqual([]);
    await redis.kill();
    const denied = await hit(a);
    expect(denied.status).toBe(503);
    expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e instanceof Error && e.message !== '')).toBe(true);

    choice = () => {
      throw new Error('metrics backend down');
    };
    // Wait out the breaker's back-off so the next request meets a fresh error.
    await sleep(300);
    const fallback = await hit(a);
    expect(fallback.status).toBe(200);
    expect(fallback.headers['ratelimit']).toBeDefined();
  });

  it('bounds the wait even for a client passed in with ioredis defaults (offline queue on)', async () => {
    const client = new Redis(redis.url);
    try {
      const a = await boot({ redis: client });
      const limiter = a.get(RateLimitService);
      await redis.kill();
      const latencies: number[] = [];
      const sources: Array<string | undefined> = [];
      // An answer cannot come while this process itself is held up (the CPU busy elsewhere, a
      // long GC): the longest such hold-up is allowed on top of the margin, as in faults.spec.ts.
      const stalls = monitorEventLoopDelay({ resolution: 10 });
      stalls.enable();
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        const decision = await limiter.consume(`queued:${i % 3}`, { period: '1h', threshold: 100 });
        latencies.push(performance.now() - started);
        sources.push(decision.degraded);
      }
      stalls.disable();
      expect(Math.max(...latencies)).toBeLessThanOrEqual(100 + 75 + stalls.max / 1e6);
      expect(sources.every((s) => s === 'memory')).toBe(true);

      // ioredis reconnects on its own schedule; shared limiting resumes when it has.
      await redis.restart();
      const back = performance.now();
      let decision = await limiter.consume('after', { period: '1h', threshold: 100 });
      while (decision.degraded !== undefined && performance.now() - back < 10_000) {
        await sleep(50);
        decision = await limiter.consume('after', { period: '1h', threshold: 100 });
      }
      expect(decision.degraded).toBeUndefined();
    } finally {
      client.disconnect();
    }
  });
});
