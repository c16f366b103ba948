/**
 * The health indicator behind a real Terminus endpoint: a Nest app with `TerminusModule` and the
 * rate-limit module on a private redis-server, asked over HTTP while Redis is up, after it is
 * killed, and once it is back; with ioredis and node-redis clients, under `onStoreError: 'memory'`
 * (still 200, the degradation in the details) and `'deny'` (503); one master of a cluster frozen.
 * Then the memory store, a custom store, a handler that chooses `'deny'`, and the module without
 * Terminus at all.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  RateLimit,
  RateLimitHealthIndicator,
  RateLimitModule,
  RateLimitService,
  type RateLimitDecision,
  type RateLimitStore,
  MemoryStore,
} from '../../lib/index.js';
import { type RateLimitHealthDetails } from '../../lib/health/rate-limit.health.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { type RedisClient } from '../../lib/stores/redis/clients/redis-client.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { type ClientKind } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { useCluster } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';

@Controller()
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicator: RateLimitHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.indicator.isHealthy('rate-limit')]);
  }

  @RateLimit({ period: '1h', threshold: 1_000_000 })
  @Get('limited')
  limited() {
    return { ok: true };
  }
}

async function healthApp(options: RateLimitRootOptions): Promise<INestApplication> {
  @Module({
    imports: [TerminusModule.forRoot({ logger: false }), RateLimitModule.forRoot(options)],
    controllers: [HealthController],
  })
  class AppModule {}
  const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

interface HealthBody {
  status: string;
  details: Record<string, RateLimitHealthDetails>;
}

async function health(app: INestApplication) {
  const res = await request(app.getHttpServer()).get('/health');
  return { status: res.status, body: res.body as HealthBody };
}

const details = async (app: INestApplication) => (await health(app)).body.details['rate-limit'];

const LIBRARY: Partial<Record<ClientKind, string>> = {
  ioredis: 'ioredis',
  'node-redis': 'node-redis',
};

describe.each(['ioredis', 'node-redis'] as const)(
  'the health endpoint on Redis through %s',
  (kind) => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis.stop();
    });

    it.each(['memory', 'deny'] as const)(
      "onStoreError '%s': up, then Redis killed, then back",
      async (onStoreError) => {
        const client: RedisClient = await redis.connect(kind);
        // The check's PING is bounded by the timeout and counts as a call: generous, so that a
        // busy machine's stall is not an outage of its own (a killed server fails at once).
        const app = await healthApp({ redis: client, onStoreError, timeout: 500 });
        try {
          // Up: shared through Redis, the library loaded.
          const up = await health(app);
          expect(up.status).toBe(200);
          expect(up.body.status).toBe('ok');
          const { latencyMs, ...upDetails } = up.body.details['rate-limit'];
          expect(upDetails).toEqual({
            status: 'up',
            store: 'redis',
            library: LIBRARY[kind],
            decisionsRunAs: 'functions',
            reachable: true,
            degraded: false,
            breaker: 'closed',
            failingNodes: 0,
          });
          expect(latencyMs).toBeGreaterThanOrEqual(0);
          expect((await request(app.getHttpServer()).get('/limited')).status).toBe(200);

          // Killed: the next check sees it, with no decision made meanwhile.
          const killedAt = Date.now();
          await redis.kill('SIGKILL');
          await waitFor('an unreachable report', 3000, async () => {
            const d = await details(app);
            return d.reachable === false || JSON.stringify(d);
          });
          const down = await health(app);
          expect(down.status).toBe(onStoreError === 'memory' ? 200 : 503);
          expect(down.body.status).toBe(onStoreError === 'memory' ? 'ok' : 'error');
          const during = down.body.details['rate-limit'];
          expect(during).toMatchObject({
            status: onStoreError === 'memory' ? 'up' : 'down',
            store: 'redis',
            reachable: false,
            degraded: true,
            fallback: onStoreError,
            failingNodes: 1,
          });
          expect(during.error).toMatch(/not connected|closed|ECONNREFUSED|socket/i);
          expect(Date.parse(during.degradedSince!)).toBeGreaterThanOrEqual(killedAt - 5);
          expect(Date.parse(during.degradedSince!)).toBeLessThanOrEqual(Date.now());

          // Decisions meanwhile are answered by the fallback, and counted in the report.
          const answered = [];
          for (let i = 0; i < 5; i++) {
            answered.push((await request(app.getHttpServer()).get('/limited')).status);
          }
          expect(answered).toEqual(Array(5).fill(onStoreError === 'memory' ? 200 : 503));
          const afterTraffic = await details(app);
          expect(afterTraffic.fallbackAnswers).toBe(5);
          expect(afterTraffic.breaker).not.toBe('closed');
          expect(afterTraffic.degradedSince).toBe(during.degradedSince);

          // Back: healthy again without waiting for traffic to tell the store.
          await redis.restart();
          await waitFor('a healthy report', 5000, async () => {
            const res = await health(app);
            const d = res.body.details['rate-limit'];
            return (res.status === 200 && d.reachable && !d.degraded) || JSON.stringify(res.body);
          });
          const back = await health(app);
          expect(back.status).toBe(200);
          expect(back.body.details['rate-limit']).toMatchObject({
            status: 'up',
            reachable: true,
            degraded: false,
            failingNodes: 0,
          });
          expect(back.body.details['rate-limit'].degradedSince).toBeUndefined();
          // And decisions are shared through Redis again.
          await waitFor('a decision in Redis', 5000, async () => {
            const res = await request(app.getHttpServer()).get('/limited');
            const keys = await redis.client().keys('rate-limit:*');
            return (res.status === 200 && keys.length > 0) || `${res.status}, ${keys.length} keys`;
          });
          expect((await details(app)).breaker).toBe('closed');
        } finally {
          await app.close();
        }
      },
    );
  },
);

describe('the health endpoint on a 3-master cluster', () => {
  // Without full coverage, the other masters keep answering while one is frozen.
  const cluster = useCluster({
    replicas: 0,
    own: true,
    nodeArgs: ['--cluster-require-full-coverage', 'no'],
  });

  it('counts the failing master, stays up on the memory fallback, and recovers', async () => {
    const client = await cluster().connect('ioredis');
    const app = await healthApp({ redis: client, timeout: 100 });
    const [victim] = await cluster().masters();
    const node = cluster().nodes.find((n) => n.port === victim.port)!;
    try {
      expect(await details(app)).toMatchObject({ status: 'up', degraded: false, failingNodes: 0 });
      const admin = cluster().admin(victim);
      const keys: string[] = [];
      while (keys.length < 8) {
        const key = `health-${randomUUID()}`;
        const slot = (await admin.call('CLUSTER', 'KEYSLOT', key)) as number;
        if (victim.slots.some(([from, to]) => slot >= from && slot <= to)) keys.push(key);
      }
      const limiter = app.get(RateLimitService);
      const policy = { period: '1h', threshold: 1_000_000 } as const;
      node.freeze(true);
      try {
        for (const key of keys.slice(0, 5))
          expect((await limiter.consume(key, policy)).degraded).toBe('memory');
        // A key on another master is still decided in Redis.
        let other = `health-${randomUUID()}`;
        while (victim.slots.some(([from, to]) => keySlot(other) >= from && keySlot(other) <= to)) {
          other = `health-${randomUUID()}`;
        }
        expect((await limiter.consume(other, policy)).degraded).toBeUndefined();
        const res = await health(app);
        expect(res.status).toBe(200);
        expect(res.body.details['rate-limit']).toMatchObject({
          status: 'up',
          store: 'redis',
          degraded: true,
          fallback: 'memory',
          breaker: 'open',
          failingNodes: 1,
        });
        // The outage counts from the failure that began it: on a busy machine, a first decision
        // whose deadline passed while this process was held up is not counted against the master.
        const { fallbackAnswers } = res.body.details['rate-limit'] as { fallbackAnswers: number };
        expect(fallbackAnswers).toBeGreaterThanOrEqual(1);
        expect(fallbackAnswers).toBeLessThanOrEqual(5);
        // From then on, each decision for the master is one more answer of the fallback's.
        for (const key of keys.slice(5))
          expect((await limiter.consume(key, policy)).degraded).toBe('memory');
        expect(await details(app)).toMatchObject({ fallbackAnswers: fallbackAnswers + 3 });
      } finally {
        node.freeze(false);
      }
      await waitFor('a healthy report', 10_000, async () => {
        const d = await details(app);
        return (!d.degraded && d.reachable && d.failingNodes === 0) || JSON.stringify(d);
      });
    } finally {
      await app.close();
    }
  });
});

describe('the health endpoint on other stores', () => {
  it('is always up on the memory store', async () => {
    const app = await healthApp({});
    try {
      const res = await health(app);
      expect(res.status).toBe(200);
      expect(res.body.details['rate-limit']).toEqual({
        status: 'up',
        store: 'memory',
        reachable: true,
        degraded: false,
      });
    } finally {
      await app.close();
    }
  });

  /** A store of the user's own that fails while `failing` is set. */
  class FlakyStore implements RateLimitStore {
    failing = false;
    private readonly backing = new MemoryStore();
    consume(...args: Parameters<RateLimitStore['consume']>): Promise<RateLimitDecision> {
      if (this.failing) return Promise.reject(new Error('the flaky store is down'));
      return this.backing.consume(...args);
    }
  }

  const CUSTOM_CASES: Array<[string, RateLimitRootOptions['onStoreError'], number]> = [
    ['memory', 'memory', 200],
    ['a handler choosing deny', () => 'deny', 503],
  ];
  it.each(CUSTOM_CASES)(
    "reports a custom store's outage by what its decisions saw (onStoreError %s)",
    async (_name, onStoreError, failingStatus) => {
      const store = new FlakyStore();
      const app = await healthApp({ store, onStoreError, timeout: 100 });
      try {
        const before = await health(app);
        expect(before.status).toBe(200);
        expect(before.body.details['rate-limit']).toEqual({
          status: 'up',
          store: 'FlakyStore',
          reachable: true,
          degraded: false,
          breaker: 'closed',
          failingNodes: 0,
        });
        store.failing = true;
        // Nothing has failed yet: the store does not know.
        expect((await health(app)).status).toBe(200);
        await request(app.getHttpServer()).get('/limited');
        const during = await health(app);
        expect(during.status).toBe(failingStatus);
        expect(during.body.details['rate-limit']).toMatchObject({
          status: failingStatus === 200 ? 'up' : 'down',
          reachable: false,
          degraded: true,
          fallback: failingStatus === 200 ? 'memory' : 'deny',
          fallbackAnswers: 1,
          failingNodes: 1,
        });
        store.failing = false;
        // Recovers as the store itself does: a success, a second after the last failure.
        await waitFor('a recovered report', 5000, async () => {
          await request(app.getHttpServer()).get('/limited');
          const d = await details(app);
          return !d.degraded || JSON.stringify(d);
        });
        expect((await health(app)).status).toBe(200);
      } finally {
        await app.close();
      }
    },
  );
});

describe('without Terminus', () => {
  it('boots the module and answers the indicator without TerminusModule', async () => {
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({})],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    try {
      const result = await app.get(RateLimitHealthIndicator).isHealthy('limits');
      expect(result).toEqual({
        limits: { status: 'up', store: 'memory', reachable: true, degraded: false },
      });
    } finally {
      await app.close();
    }
  });

  it('imports @nestjs/terminus from nowhere in the library', () => {
    const root = fileURLToPath(new URL('../../lib', import.meta.url));
    const sources = (readdirSync(root, { recursive: true }) as string[]).filter((f) =>
      f.endsWith('.ts'),
    );
    expect(sources.length).toBeGreaterThan(20);
    const importing = sources.filter((f) =>
      /from\s+['"]@nestjs\/terminus|import\(\s*['"]@nestjs\/terminus/.test(
        readFileSync(join(root, f), 'utf8'),
      ),
    );
    expect(importing).toEqual([]);
  });
});
