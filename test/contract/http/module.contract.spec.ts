import { afterEach, describe, expect, it } from '@jest/globals';
import {
  type CanActivate,
  Controller,
  type ExecutionContext,
  Get,
  type INestApplication,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { type GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import request from 'supertest';
import {
  MemoryStore,
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitOptionsFactory,
  RateLimitService,
  RateLimitStore,
  RedisStore,
} from '../../../lib/index.js';
import { type NodeRedisClient } from '../../../lib/stores/redis/clients/node-redis.client.js';
import { primaryOf, STORE_KINDS, TestClock, useRedis } from '../../support/stores.js';
import {
  createApp,
  HTTP_ADAPTERS,
  type HttpAdapterKind,
  uniquePrefix,
  uniqueUser,
  USER_HEADER,
} from './fixtures/app.js';
import { CONTROLLERS, ItemsHeadController } from './fixtures/controllers.js';
import { startHttpApp } from './fixtures/http-app.js';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { isDecisionIdKey, stateKeys } from '../../support/decision-ids.js';
import '../../support/glide-logger.js';

const CONFIG = Symbol('CONFIG');

@Module({ providers: [{ provide: CONFIG, useValue: { threshold: 2 } }], exports: [CONFIG] })
class ConfigModule {}

describe.each(STORE_KINDS)('module contract on the %s store', (kind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];
  const storeOptions = (): RateLimitModuleOptions =>
    kind === 'redis' ? { redis: redis().url } : {};

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function boot(
    imports: unknown[],
    controllers: Array<new () => object> = CONTROLLERS,
    adapter: HttpAdapterKind = 'express',
  ): Promise<INestApplication> {
    if (adapter === 'fastify') controllers = controllers.filter((c) => c !== ItemsHeadController);
    const app = await startHttpApp({ imports: imports as never[], controllers }, { adapter });
    apps.push(app);
    return app;
  }

  it("reproduces the seed's is_action_allowed('laoqian', 'reply', 60, 5) loop through consume()", async () => {
    const app = await boot([
      RateLimitModule.forRoot({ ...storeOptions(), keyPrefix: uniquePrefix() }),
    ]);
    const limiter = app.get(RateLimitService);
    const answers: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      answers.push((await limiter.consume('laoqian:reply', { period: 60, threshold: 5 })).allowed);
    }
    expect(answers).toEqual([true, true, true, true, true, false]);
    const last = await limiter.consume('laoqian:reply', { period: 60, threshold: 5 });
    expect(last).toMatchObject({ allowed: false, limit: 5, remaining: 0 });
    expect(last.retryAfterMs).toBeGreaterThan(59_000);
    expect(last.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('configures itself with forRootAsync, useFactory and inject', async () => {
    const keyPrefix = uniquePrefix();
    const app = await boot([
      RateLimitModule.forRootAsync({
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: async (config: { threshold: number }) => {
          await Promise.resolve();
          return { ...storeOptions(), keyPrefix, errorMessage: `max ${config.threshold}` };
        },
      }),
    ]);
    const user = uniqueUser();
    const hit = () => request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user);
    expect([(await hit()).status, (await hit()).status]).toEqual([200, 200]);
    const third = await hit();
    expect(third.status).toBe(429);
    expect(third.body.message).toBe('max 2');
    const consumed = await app.get(RateLimitService).consume('job', { threshold: 1 });
    expect(consumed.allowed).toBe(true);
  });

  it('configures itself with forRootAsync and useClass', async () => {
    const opts = { ...storeOptions(), keyPrefix: uniquePrefix(), headers: 'legacy' as const };
    @Injectable()
    class Options implements RateLimitOptionsFactory {
      createRateLimitOptions() {
        return opts;
      }
    }
    const app = await boot([RateLimitModule.forRootAsync({ useClass: Options })]);
    const res = await request(app.getHttpServer())
      .get('/hello/sayHi')
      .set(USER_HEADER, uniqueUser());
    expect(res.headers['x-ratelimit-limit']).toBe('2');
  });

  it('honours globalGuard: false, limiting only where RateLimitGuard is attached', async () => {
    @Controller('guarded')
    @UseGuards(RateLimitGuard)
    class GuardedController {
      @RateLimit({ threshold: 1 })
      @Get()
      get() {
        return 'ok';
      }
    }
    const app = await boot(
      [
        RateLimitModule.forRoot({
          ...storeOptions(),
          keyPrefix: uniquePrefix(),
          globalGuard: false,
        }),
      ],
      [...CONTROLLERS, GuardedController],
    );
    const user = uniqueUser();
    const hit = (path: string) => request(app.getHttpServer()).get(path).set(USER_HEADER, user);
    const unguarded = [];
    for (let i = 0; i < 4; i++) unguarded.push((await hit('/hello/sayHi')).status);
    expect(unguarded).toEqual([200, 200, 200, 200]);
    expect([(await hit('/guarded')).status, (await hit('/guarded')).status]).toEqual([200, 429]);
  });

  it.each(HTTP_ADAPTERS)(
    'sees req.user set by an auth guard registered as APP_GUARD in a module imported first (%s)',
    async (adapter) => {
      @Injectable()
      class HeaderAuthGuard implements CanActivate {
        canActivate(context: ExecutionContext) {
          const req = context.switchToHttp().getRequest();
          req.user = { id: req.headers['x-auth'] };
          return true;
        }
      }
      @Module({ providers: [{ provide: APP_GUARD, useClass: HeaderAuthGuard }] })
      class AuthModule {}

      const app = await boot(
        [AuthModule, RateLimitModule.forRoot({ ...storeOptions(), keyPrefix: uniquePrefix() })],
        CONTROLLERS,
        adapter,
      );
      const as = (user: string) =>
        request(app.getHttpServer()).get('/hello/sayHi').set('x-auth', user);
      const [alice, bob] = [uniqueUser(), uniqueUser()];
      const codes = [];
      for (const user of [alice, alice, alice, bob]) codes.push((await as(user)).status);
      // Keyed by IP instead, bob's request would be the third from 127.0.0.1 and be rejected.
      expect(codes).toEqual([200, 200, 429, 200]);
    },
  );

  it('evicts or expires every key it writes once its window has passed', async () => {
    // Redis expires keys on its own clock, so check its TTLs in real time; the memory store's
    // sweep is checked under a simulated clock.
    const clock = kind === 'memory' ? new TestClock() : undefined;
    const keyPrefix = uniquePrefix();
    const app = await boot([
      RateLimitModule.forRoot({ ...storeOptions(), keyPrefix, clock: clock?.now }),
    ]);
    const limiter = app.get(RateLimitService);
    const algorithms = [...RATE_ALGORITHMS] as const;
    // An hour: the fixed window's keys live to the end of a clock-aligned window, and a shorter
    // one would often end, taking them with it, between the writes and the check.
    for (let i = 0; i < 300; i++) {
      await limiter.consume(`user-${i}`, {
        period: '1h',
        threshold: 3,
        algorithm: algorithms[i % 5],
      });
    }
    await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, uniqueUser());

    if (kind === 'redis') {
      const client = redis().client();
      const keys = await client.keys(`${keyPrefix}:*`);
      expect(stateKeys(keys)).toHaveLength(301);
      const ttls = await Promise.all(keys.map((k) => client.pttl(k)));
      keys.forEach((k, i) => {
        // A decision's id lives a few hundred ms: one listed above may be expiring (0) or gone
        // (-2) by now. No key may be without a TTL (-1).
        if (isDecisionIdKey(k) && ttls[i] <= 0) {
          expect(ttls[i]).not.toBe(-1);
          return;
        }
        expect(ttls[i]).toBeGreaterThan(0);
        // The sliding counter keeps the current window's count through the next window; a
        // decision's id lives until its deadline (the timeout) and a little more.
        const bound = isDecisionIdKey(k)
          ? 5000
          : k.includes('sayHi')
            ? 30_000
            : k.includes(':swc:')
              ? 7_200_000
              : 3_600_000;
        expect(ttls[i]).toBeLessThanOrEqual(bound);
      });
    } else {
      const store = app.get<MemoryStore>(RateLimitStore);
      expect(store.size).toBe(301);
      clock!.advance(7_200_000);
      for (let i = 0; i < 200; i++)
        await limiter.consume('one-busy-key', { period: '2s', threshold: 1_000 });
      // Two hours on, every earlier key has expired and been swept; the busy one remains.
      expect(store.size).toBe(1);
    }
  });
});

describe('Redis: several app instances', () => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('share one limit: two instances on one Redis allow the threshold in total', async () => {
    const keyPrefix = uniquePrefix();
    const [one, two] = await Promise.all([
      createApp({ redis: redis().url, keyPrefix }),
      createApp({ redis: redis().url, keyPrefix }),
    ]);
    apps.push(one, two);
    const user = uniqueUser();
    const codes = [];
    for (const app of [one, two, one, two]) {
      codes.push(
        (await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user)).status,
      );
    }
    expect(codes).toEqual([200, 200, 429, 429]);

    const burst = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        request((i % 2 ? one : two).getHttpServer())
          .get('/burst')
          .set(USER_HEADER, user),
      ),
    );
    expect(burst.filter((r) => r.status === 200)).toHaveLength(10);
  });

  it('closes a client it created and leaves a client it was given open', async () => {
    const given = new Redis(redis().url);
    const mine = await createApp({ redis: given, keyPrefix: uniquePrefix() });
    const store = primaryOf(mine.get(RateLimitStore)) as RedisStore;
    expect(store.client).toBe(given);
    await mine.close();
    expect(await given.ping()).toBe('PONG');
    await given.quit();

    const owned = await createApp({ redis: redis().url, keyPrefix: uniquePrefix() });
    const created = (primaryOf(owned.get(RateLimitStore)) as RedisStore).client as Redis;
    expect(await created.ping()).toBe('PONG');
    await owned.close();
    expect(created.status).toBe('end');
  });

  it('one instance on ioredis and one on node-redis share one limit', async () => {
    const keyPrefix = uniquePrefix();
    const [one, two] = await Promise.all([
      createApp({ redis: await redis().connect('ioredis'), keyPrefix }),
      createApp({ redis: await redis().connect('node-redis'), keyPrefix }),
    ]);
    apps.push(one, two);
    const user = uniqueUser();
    const codes = [];
    for (const app of [two, one, two, one]) {
      codes.push(
        (await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user)).status,
      );
    }
    expect(codes).toEqual([200, 200, 429, 429]);
  });

  it('leaves a node-redis client it was given open', async () => {
    const given = (await redis().connect('node-redis')) as NodeRedisClient & {
      ping(): Promise<string>;
    };
    const app = await createApp({ redis: given, keyPrefix: uniquePrefix() });
    const store = primaryOf(app.get(RateLimitStore)) as RedisStore;
    expect(store.library).toBe('node-redis');
    const res = await request(app.getHttpServer())
      .get('/hello/sayHi')
      .set(USER_HEADER, uniqueUser());
    expect(res.headers['ratelimit']).toBe('"2-per-30s";r=1;t=30');
    await app.close();
    expect(await given.ping()).toBe('PONG');
  });

  it('connects a node-redis client handed over unconnected, and closes it on shutdown', async () => {
    const unopened = createClient({ url: redis().url });
    const app = await createApp({ redis: unopened, keyPrefix: uniquePrefix() });
    try {
      const decision = await app
        .get(RateLimitService)
        .consume('unopened', { period: 60, threshold: 1 });
      expect(decision.allowed).toBe(true);
      expect(decision.degraded).toBeUndefined();
    } finally {
      await app.close();
    }
    expect(unopened.isOpen).toBe(false);
  });

  it('leaves a GLIDE client it was given open, and shares limits with an ioredis instance', async () => {
    const given = (await redis().connect('glide')) as GlideClient;
    const keyPrefix = uniquePrefix();
    const [one, two] = await Promise.all([
      createApp({ redis: given, keyPrefix }),
      createApp({ redis: await redis().connect('ioredis'), keyPrefix }),
    ]);
    apps.push(two);
    const store = primaryOf(one.get(RateLimitStore)) as RedisStore;
    expect(store.library).toBe('valkey-glide');
    const user = uniqueUser();
    const codes = [];
    for (const app of [one, two, one, two]) {
      codes.push(
        (await request(app.getHttpServer()).get('/hello/sayHi').set(USER_HEADER, user)).status,
      );
    }
    expect(codes).toEqual([200, 200, 429, 429]);
    await one.close();
    expect(await given.ping()).toBe('PONG');
  });

  it('connects a GLIDE client created with lazyConnect, and closes it on shutdown', async () => {
    const lazy = (await redis().connect('glide', { lazyConnect: true })) as GlideClient;
    const app = await createApp({ redis: lazy, keyPrefix: uniquePrefix() });
    try {
      const decision = await app
        .get(RateLimitService)
        .consume('lazy', { period: 60, threshold: 1 });
      expect(decision.allowed).toBe(true);
      expect(decision.degraded).toBeUndefined();
    } finally {
      await app.close();
    }
    await expect(lazy.ping()).rejects.toThrow(/closed/);
  });

  it('uses ioredis options to create a client', async () => {
    const app = await createApp({
      redis: { host: '127.0.0.1', port: redis().port },
      keyPrefix: uniquePrefix(),
    });
    apps.push(app);
    const res = await request(app.getHttpServer())
      .get('/hello/sayHi')
      .set(USER_HEADER, uniqueUser());
    expect(res.status).toBe(200);
    expect(primaryOf(app.get(RateLimitStore))).toBeInstanceOf(RedisStore);
  });
});
