/**
 * A policy's own `onStoreError` on routes, with Redis really stopped under two Nest app instances
 * that share it: it overrides the module's answer for that policy, and on a route with several
 * policies the strictest answer wins ('deny', then 'memory', then 'allow'). The breaker, once
 * open, answers without asking Redis: the override must hold there too.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitModule } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { STORE_UNAVAILABLE_MESSAGE } from '../../lib/rate-limit.exception.js';
import { STORE_KINDS } from '../support/stores.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait-for.js';
import { CapturingLogger } from './traffic.js';

/** Handlers of the concurrency routes hold here until the test lets them finish. */
const jobs = {
  running: 0,
  most: 0,
  release: () => {},
  gate: Promise.resolve(),
  close() {
    this.running = 0;
    this.most = 0;
    this.gate = new Promise<void>((resolve) => (this.release = resolve));
  },
  async run() {
    this.most = Math.max(this.most, ++this.running);
    await this.gate;
    this.running--;
    return 'done';
  },
};

@Controller()
class AnswersController {
  @RateLimit({ period: '1h', threshold: 3, onStoreError: 'deny' })
  @Get('login')
  login() {
    return 'ok';
  }

  @RateLimit({ period: '1h', threshold: 3 })
  @Get('list')
  list() {
    return 'ok';
  }

  @RateLimit({ period: '1h', threshold: 3, onStoreError: 'memory' })
  @Get('metered')
  metered() {
    return 'ok';
  }

  @RateLimit({ period: '1h', threshold: 3, onStoreError: 'allow' })
  @Get('courtesy')
  courtesy() {
    return 'ok';
  }

  @RateLimit([
    { name: 'strict', period: '1h', threshold: 3, onStoreError: 'deny' },
    { name: 'plain', period: '1h', threshold: 5 },
  ])
  @Get('both')
  both() {
    return 'ok';
  }

  @RateLimit({ algorithm: 'concurrency', threshold: 3, period: '30s', onStoreError: 'deny' })
  @Get('export')
  export() {
    return jobs.run();
  }

  @RateLimit({ algorithm: 'concurrency', threshold: 3, period: '30s' })
  @Get('export-anyway')
  exportAnyway() {
    return jobs.run();
  }
}

/** A threshold whose promise never settles: past `functionTimeout`, onStoreError answers. */
const never = (): Promise<never> => new Promise<never>(() => {});

@Controller('hang')
class HangingController {
  @RateLimit({ name: 'per-plan', period: '1h', threshold: never, onStoreError: 'deny' })
  @Get('deny')
  deny() {
    return 'ok';
  }

  @RateLimit({ name: 'per-plan', period: '1h', threshold: never })
  @Get('module')
  module() {
    return 'ok';
  }
}

describe('a policy onStoreError on routes, two instances, Redis stopped', () => {
  let redis: TestRedis;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    jobs.release();
    await Promise.all(apps.splice(0).map((a) => a.close()));
    // Every test leaves the server running for the next one.
    await redis
      .client()
      .ping()
      .catch(() => redis.restart());
  });
  afterAll(async () => {
    await redis.stop();
  });

  /** Two instances of one app on the same Redis, as behind a load balancer. */
  async function instances(options: RateLimitRootOptions = {}) {
    const keyPrefix = `pfa${Date.now()}`;
    for (let i = 0; i < 2; i++) {
      const ref = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({ redis: redis.url, keyPrefix, timeout: 100, ...options }),
        ],
        controllers: [AnswersController],
      }).compile();
      const app = ref.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      apps.push(app);
    }
    return apps.slice(-2);
  }
  const hit = (app: INestApplication, path: string) => request(app.getHttpServer()).get(path);
  async function statuses(app: INestApplication, path: string, n: number) {
    const seen: number[] = [];
    for (let i = 0; i < n; i++) seen.push((await hit(app, path)).status);
    return seen;
  }

  it("'deny' on a policy answers 503 on both instances; a route without it falls back to memory, per instance", async () => {
    const [a, b] = await instances();
    expect((await hit(a, '/login')).status).toBe(200);
    await redis.kill();
    // The routes without an override go first: they open the breaker under the module's 'memory'.
    expect(await statuses(a, '/list', 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(b, '/list', 4)).toEqual([200, 200, 200, 429]);
    for (const app of [a, b]) {
      const denied = await hit(app, '/login');
      expect(denied.status).toBe(503);
      expect(denied.body.message).toBe(STORE_UNAVAILABLE_MESSAGE);
      expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(await statuses(a, '/login', 3)).toEqual([503, 503, 503]);
  });

  it("a concurrency policy with 'deny' lets none run, while the module's 'memory' lets 3 per instance", async () => {
    const [a, b] = await instances();
    await redis.kill();
    jobs.close();
    let answered = 0;
    const denied = Array.from({ length: 9 }, (_, i) =>
      hit(i % 2 === 0 ? a : b, '/export').then((r) => (answered++, r)),
    );
    await waitFor('every call answered, or one running', 5000, async () =>
      answered === 9 || jobs.running > 0 ? true : `${answered} answered`,
    );
    expect(jobs.most).toBe(0);
    jobs.release();
    expect((await Promise.all(denied)).map((r) => r.status)).toEqual(Array(9).fill(503));

    // The same limit without the override: each instance leases 3 from its own memory.
    jobs.close();
    let back = 0;
    const anyway = Array.from({ length: 9 }, (_, i) =>
      hit(i % 2 === 0 ? a : b, '/export-anyway').then((r) => (back++, r)),
    );
    await waitFor('6 running and 3 turned away', 5000, async () =>
      jobs.running === 6 && back === 3 ? true : `${jobs.running} running, ${back} back`,
    );
    jobs.release();
    const statusCounts = (await Promise.all(anyway)).map((r) => r.status).sort();
    expect(statusCounts).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429]);
    expect(jobs.most).toBe(6);
  });

  it("a route with a 'deny' policy and one of the module's is denied", async () => {
    const [a, b] = await instances();
    await redis.kill();
    expect(await statuses(a, '/both', 2)).toEqual([503, 503]);
    expect(await statuses(b, '/both', 2)).toEqual([503, 503]);
  });

  it("under the module's 'deny', a policy's 'memory' limits per instance, and its 'allow' lets through", async () => {
    const [a, b] = await instances({ onStoreError: 'deny' });
    await redis.kill();
    expect(await statuses(a, '/list', 4)).toEqual([503, 503, 503, 503]);
    const counted = await hit(b, '/metered');
    expect(counted.status).toBe(200);
    expect(counted.headers['ratelimit']).toBe('"3-per-1h";r=2;t=3600');
    expect(await statuses(b, '/metered', 3)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/metered', 4)).toEqual([200, 200, 200, 429]);
    const passed = await Promise.all([1, 2, 3, 4, 5].map(() => hit(a, '/courtesy')));
    expect(passed.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(passed.every((r) => r.headers['ratelimit'] === undefined)).toBe(true);
    expect((await hit(b, '/both')).status).toBe(503);
  });

  it("a module handler's answer stands for the policies without their own", async () => {
    const [a] = await instances({ onStoreError: () => 'allow' });
    await redis.kill();
    expect(await statuses(a, '/list', 5)).toEqual([200, 200, 200, 200, 200]);
    expect(await statuses(a, '/login', 2)).toEqual([503, 503]);
    expect(await statuses(a, '/metered', 4)).toEqual([200, 200, 200, 429]);
    // Strictest wins: 'deny' on one policy over the handler's 'allow' for the other.
    expect((await hit(a, '/both')).status).toBe(503);
  });

  it('shared limiting resumes for every policy once Redis is back', async () => {
    const [a, b] = await instances();
    await redis.kill();
    expect((await hit(a, '/login')).status).toBe(503);
    await redis.restart();
    // Each instance finds Redis again in its own time (a reconnect, then its breaker's probe);
    // a 503 on the way counts nowhere, so each wait spends exactly one of the shared 3.
    for (const app of [b, a]) {
      await waitFor('a shared answer', 10_000, async () => {
        const status = (await hit(app, '/login')).status;
        return status === 200 ? true : `status ${status}`;
      });
    }
    // Redis came back empty: the shared count starts with the two requests that got through.
    expect(await statuses(a, '/login', 2)).toEqual([200, 429]);
    expect(await statuses(b, '/login', 1)).toEqual([429]);
  });
});

describe.each(STORE_KINDS)(
  'a policy onStoreError when a function never settles, on the %s store',
  (kind) => {
    let redis: TestRedis | undefined;
    let app: INestApplication | undefined;
    beforeAll(async () => {
      if (kind === 'redis') redis = await startRedis();
    });
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it("answers 503 for a 'deny' policy, while the module's 'memory' decides the others", async () => {
      const ref = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({
            keyPrefix: `pfh${Date.now()}`,
            functionTimeout: 50,
            ...(redis === undefined ? {} : { redis: redis.url }),
          }),
        ],
        controllers: [HangingController],
      }).compile();
      const logger = new CapturingLogger();
      Logger.overrideLogger(logger);
      app = ref.createNestApplication({ logger });
      await app.listen(0, '127.0.0.1');
      const denied = await request(app.getHttpServer()).get('/hang/deny');
      expect(denied.status).toBe(503);
      expect(denied.body.message).toBe(STORE_UNAVAILABLE_MESSAGE);
      // Memory decides with the default threshold (3) in place of the missing one.
      const decided = await request(app.getHttpServer()).get('/hang/module');
      expect(decided.status).toBe(200);
      expect(decided.headers['ratelimit']).toBe('"per-plan";r=2;t=3600');
      // Each warning names the answer that was given.
      const expiry = 'threshold did not settle within 50ms for @RateLimit on HangingController';
      expect(logger.warnings).toEqual([
        `${expiry}.deny; denying it with 503, as onStoreError says`,
        `${expiry}.module; deciding it per instance in memory, with the default threshold, as onStoreError says`,
      ]);
    });
  },
);
