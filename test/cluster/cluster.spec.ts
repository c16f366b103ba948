/** The store contract, several policies per decision, and key placement on a 3-master cluster. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, type ExecutionContext, Get, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type Cluster, type Redis } from 'ioredis';
import { createCluster } from 'redis';
import { createCluster as createClusterV5 } from 'redis-v5';
import request from 'supertest';
import {
  RateLimit,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
  RateLimitStore,
  type RoutePolicy,
  RedisStore,
} from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import { type NodeRedisClient } from '../../lib/stores/redis/clients/node-redis.client.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { DECISION_LIBRARY } from '../../lib/stores/redis/decisions/scripts.js';
import { uniquePrefix, uniqueUser, USER_HEADER } from '../contract/http/fixtures/app.js';
import { storeContract } from '../contract/store/store.suite.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { primaryOf, TestClock, useCluster, useRedis } from '../support/stores.js';
import { stateKeys } from '../support/decision-ids.js';
import { waitFor } from '../support/wait-for.js';

const cluster = useCluster();

describe.each(CLIENT_KINDS)('store contract on the cluster store through %s', (kind) => {
  storeContract({
    storeClient: () => cluster().connect(kind),
    inspect: () => cluster().client(),
  });

  it('loads the function library on every master', async () => {
    const store = new RedisStore({ client: await cluster().connect(kind) });
    await store.warmUp();
    expect(store.usesFunctions).toBe(true);
    const masters = await cluster().masters();
    expect(masters).toHaveLength(3);
    for (const master of masters) {
      const listed = await cluster()
        .admin(master)
        .call('FUNCTION', 'LIST', 'LIBRARYNAME', DECISION_LIBRARY.name);
      expect(JSON.stringify(listed)).toContain(DECISION_LIBRARY.name);
    }
  });

  it("sends each decision straight to the master of its keys' slot, and names that master", async () => {
    const store = new RedisStore({ client: await cluster().connect(kind) });
    await store.warmUp();
    const masters = await cluster().masters();
    await Promise.all(masters.map((master) => cluster().admin(master).config('RESETSTAT')));
    const policy = resolvePolicy({ period: '1h', threshold: 100 }, 'routed');
    const keys = ['{routed-a}:k', '{routed-b}:k', '{routed-c}:k', '{routed-d}:k'];
    for (const key of keys) {
      for (let i = 0; i < 5; i++) await store.consume([key], [policy], [1]);
    }
    const owner = (key: string) =>
      masters.find((m) =>
        m.slots.some(([from, to]) => keySlot(key) >= from && keySlot(key) <= to),
      )!;
    // Each master ran exactly the decisions on its own keys, and refused none (a MOVED reply is
    // a rejected call): the client routed them by key, not by redirection.
    for (const master of masters) {
      const stats = String(await cluster().admin(master).info('commandstats'));
      const fcall = /cmdstat_fcall:calls=(\d+),.*rejected_calls=(\d+)/.exec(stats);
      const expected = keys.filter((key) => owner(key) === master).length * 5;
      expect([Number(fcall?.[1] ?? 0), Number(fcall?.[2] ?? 0)]).toEqual([expected, 0]);
    }
    // A GLIDE client's map is read when first asked for.
    await waitFor('a slot map', 2000, async () =>
      keys.every((key) => store.nodeOf([key]) !== '') ? true : 'some slots unknown',
    );
    for (const key of keys) {
      expect(store.nodeOf([key])).toBe(`${owner(key).host}:${owner(key).port}`);
    }
  });
});

@Controller('mixed')
class MixedController {
  /** A short sliding window in front of a long token bucket. */
  @RateLimit([
    { period: 60, threshold: 3, name: 'minute' },
    { period: 3600, threshold: 5, algorithm: 'token-bucket', name: 'bucket' },
  ])
  @Get('window-and-bucket')
  windowAndBucket() {
    return 'ok';
  }

  /** The three other algorithms on one route. */
  @RateLimit([
    { period: 10, threshold: 4, algorithm: 'sliding-window-counter' },
    { period: 60, threshold: 5, algorithm: 'fixed-window' },
    { period: 30, threshold: 3, algorithm: 'leaky-bucket' },
  ])
  @Get('three-algorithms')
  threeAlgorithms() {
    return 'ok';
  }
}

const API: RoutePolicy = {
  period: 60,
  threshold: 4,
  name: 'api',
  scope: 'app',
};

@Controller('scoped')
class ScopedController {
  /** A per-route policy and an app-wide one, in one atomic decision. */
  @RateLimit([{ period: 60, threshold: 2, name: 'route' }, API])
  @Get('x')
  x() {
    return 'ok';
  }

  @RateLimit([{ period: 60, threshold: 2, name: 'route', algorithm: 'token-bucket' }, API])
  @Get('y')
  y() {
    return 'ok';
  }
}

type Step = [advanceMs: number, path: string];

const trackerOf = (context: ExecutionContext) =>
  String(
    context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers[USER_HEADER],
  );

/** Waits until the client has learnt the slot map, so no first decision outlives the store timeout. */
async function connected<T extends Redis | Cluster>(client: T): Promise<T> {
  await client.ping();
  return client;
}

describe.each(CLIENT_KINDS)('a Nest app on a 3-master Redis Cluster through %s', (kind) => {
  const single = useRedis('redis');
  const apps: INestApplication[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  // What the cluster decides is under test, not the fallback: a client still opening its
  // connection to a master, on a busy machine, gets the time to do so (5 s, not the 100 ms default).
  async function app(options: RateLimitRootOptions): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          getTracker: trackerOf,
          timeout: 5000,
          ...options,
        }),
      ],
      controllers: [MixedController, ScopedController],
    }).compile();
    const created = moduleRef.createNestApplication({ logger: false });
    await created.listen(0, '127.0.0.1');
    apps.push(created);
    const store = primaryOf(created.get(RateLimitStore));
    if (store instanceof RedisStore) {
      await waitFor('the cluster client connected', 15_000, () =>
        Promise.resolve(store.connected || 'not connected'),
      );
    }
    return created;
  }

  /** Both backends, each with its own clock at the same simulated start. */
  async function onBoth() {
    const clocks = [new TestClock(), new TestClock()];
    const clients = [await single().connect(kind), await cluster().connect(kind)];
    return { clocks, clients };
  }

  it('answers several policies of different algorithms as a single Redis does: statuses, headers, all or nothing', async () => {
    const [pair, three] = ['/mixed/window-and-bucket', '/mixed/three-algorithms'];
    const times = (n: number, step: Step): Step[] => Array.from({ length: n }, () => step);
    const steps: Step[] = [
      ...times(6, [100, pair]),
      [60_000, pair],
      ...times(2, [100, pair]),
      ...times(7, [700, three]),
      [10_000, three],
      [60_000, three],
    ];
    const { clocks, clients } = await onBoth();
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const a = await app({ redis: clients[i], clock: clocks[i].now });
      const user = uniqueUser();
      const run = [];
      for (const [advanceMs, path] of steps) {
        clocks[i].advance(advanceMs);
        const res = await request(a.getHttpServer()).get(path).set(USER_HEADER, user);
        run.push({
          path,
          status: res.status,
          policy: res.headers['ratelimit-policy'],
          limit: res.headers['ratelimit'],
          retryAfter: res.headers['retry-after'],
        });
      }
      runs.push(run);
    }
    const [onSingle, onCluster] = runs;

    expect(onCluster).toEqual(onSingle);
    // The leaky bucket (3 at once, then one per 10 s) turns away the 4th to 7th request on the
    // second route, while the counter and the fixed window would still let them through.
    expect(onCluster.map((r) => r.status)).toEqual([
      ...[200, 200, 200, 429, 429, 429, 200, 200, 429],
      ...[200, 200, 200, 429, 429, 429, 429, 200, 200],
    ]);
    // The window's rejections took nothing from the bucket…
    expect(onCluster.slice(0, 6).map((r) => r.limit)).toEqual([
      ...['"minute";r=2;t=60, "bucket";r=4;t=720', '"minute";r=1;t=60, "bucket";r=3;t=1440'],
      ...['"minute";r=0;t=60, "bucket";r=2;t=2160', '"minute";r=0;t=60, "bucket";r=2;t=2160'],
      ...['"minute";r=0;t=60, "bucket";r=2;t=2160', '"minute";r=0;t=60, "bucket";r=2;t=2160'],
    ]);
    // …and a minute later, the bucket's rejection took nothing from the window.
    expect(onCluster[8].limit).toMatch(/^"minute";r=1;t=\d+, "bucket";r=0;t=\d+$/);
  });

  it('decides RateLimitService.consume with two policies on the cluster as on a single Redis', async () => {
    const minute: RateLimitPolicy = { period: 60, threshold: 2, name: 'minute' };
    const hour: RateLimitPolicy = {
      period: '1h',
      threshold: 3,
      algorithm: 'leaky-bucket',
      name: 'hour',
    };
    const { clocks, clients } = await onBoth();
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const limiter = (await app({ redis: clients[i], clock: clocks[i].now })).get(
        RateLimitService,
      );
      const key = `job:${uniqueUser()}`;
      const run = [];
      for (const [advanceMs, cost] of [
        [0, 1],
        [10, 1],
        [10, 1],
        [60_000, 2],
        [10, 1],
        [10, 1],
      ]) {
        clocks[i].advance(advanceMs);
        run.push(await limiter.consume(key, [minute, hour], { cost }));
      }
      runs.push(run);
    }
    const [onSingle, onCluster] = runs;

    expect(onCluster).toEqual(onSingle);
    expect(onCluster.map((d) => d.policies.map((p) => p.allowed))).toEqual([
      [true, true],
      [true, true],
      [false, true],
      [true, false],
      [true, true],
      [true, false],
    ]);
    expect(onCluster.map((d) => d.allowed)).toEqual([true, true, false, false, true, false]);
    expect(onCluster[4].policies.map((p) => p.remaining)).toEqual([1, 0]);
  });

  it('spreads 300 trackers over all three masters and keeps every key of one decision in one slot', async () => {
    const client = await connected(cluster().client());
    const keyPrefix = uniquePrefix();
    // Placement is under test, not expiry: on a test clock every key lives 10 minutes past its
    // window (see redis-time.ts), where a 10-second window's keys expired before a loaded
    // machine had sent all 300 trackers.
    const clock = new TestClock();
    const a = await app({ redis: await cluster().connect(kind), keyPrefix, clock: clock.now });
    const users = Array.from({ length: 300 }, () => uniqueUser());
    const nodes = client.nodes('master');
    const masters = await cluster().masters();
    expect(nodes).toHaveLength(3);
    for (let i = 0; i < users.length; i += 30) {
      const batch = users.slice(i, i + 30);
      const codes = await Promise.all(
        batch.map(async (user) => {
          const res = await request(a.getHttpServer())
            .get('/mixed/three-algorithms')
            .set(USER_HEADER, user);
          return res.status;
        }),
      );
      expect(codes).toEqual(batch.map(() => 200));
    }
    // Where each key was found.
    const foundOn = new Map<string, number>();
    for (const [node, keys] of (
      await Promise.all(nodes.map((node) => keysOn(node, `${keyPrefix}:*`)))
    ).entries()) {
      for (const key of keys) foundOn.set(key, node);
    }

    const placed = nodes.map((node, index) => ({
      keys: [...foundOn].filter(([, on]) => on === index).map(([key]) => key),
      slots: masters.find((m) => m.port === node.options.port)!.slots,
    }));
    for (const { keys } of placed) expect(keys.length).toBeGreaterThan(0);
    // Three keys of state per tracker; the decisions' id keys, while they live, in the same slot.
    expect(stateKeys([...foundOn.keys()])).toHaveLength(300 * 3);

    const decisions = new Map<string, Array<{ node: number; slot: number }>>();
    for (const [node, { keys, slots }] of placed.entries()) {
      for (const key of keys) {
        const slot = await client.cluster('KEYSLOT', key);
        // The key sits on the master that serves its slot.
        expect(slots.some(([from, to]) => slot >= from && slot <= to)).toBe(true);
        const tag = /\{(.*)\}/.exec(key)![1];
        decisions.set(tag, [...(decisions.get(tag) ?? []), { node, slot }]);
      }
    }
    expect(decisions.size).toBe(300);
    for (const placements of decisions.values()) {
      expect(placements.length).toBeGreaterThanOrEqual(3);
      expect(new Set(placements.map((p) => `${p.node}/${p.slot}`)).size).toBe(1);
    }
  });
});

describe.each(CLIENT_KINDS)('shared scopes on a 3-master Redis Cluster through %s', (kind) => {
  const apps: INestApplication[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('decides a per-route and an app-wide policy together with no CROSSSLOT, each tracker in one slot', async () => {
    const client = await connected(cluster().client());
    const keyPrefix = uniquePrefix();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix,
          getTracker: trackerOf,
          redis: await cluster().connect(kind),
          // A store error must fail the test, not be answered from memory; a busy machine's
          // slow reply is not what this test is about, so it gets time to come.
          onStoreError: 'deny',
          timeout: 2000,
        }),
      ],
      controllers: [ScopedController],
    }).compile();
    const a = moduleRef.createNestApplication({ logger: false });
    await a.listen(0, '127.0.0.1');
    apps.push(a);

    const users = Array.from({ length: 30 }, () => uniqueUser());
    const paths = ['/scoped/x', '/scoped/x', '/scoped/x', '/scoped/y', '/scoped/y', '/scoped/y'];
    await Promise.all(
      users.map(async (user) => {
        const statuses = [];
        const shared = [];
        for (const path of paths) {
          const res = await request(a.getHttpServer()).get(path).set(USER_HEADER, user);
          statuses.push(res.status);
          shared.push(/"api";r=(\d+)/.exec(String(res.headers['ratelimit']))?.[1]);
        }
        // x: the route's 2, then its own policy rejects; y: 2 more, then the app's 4 are used.
        expect(statuses).toEqual([200, 200, 429, 200, 200, 429]);
        expect(shared).toEqual(['3', '2', '2', '1', '0', '0']);
      }),
    );

    const keys = stateKeys(
      (
        await Promise.all(client.nodes('master').map((node) => keysOn(node, `${keyPrefix}:*`)))
      ).flat(),
    );
    // Per user: the shared key and one per route.
    expect(keys).toHaveLength(users.length * 3);
    const slots = new Map<string, Set<number>>();
    for (const key of keys) {
      const tag = /\{(.*?)\}/.exec(key)![1];
      const slot = await client.cluster('KEYSLOT', key);
      slots.set(tag, (slots.get(tag) ?? new Set()).add(slot as number));
    }
    expect([...slots.keys()].sort()).toEqual([...users].sort());
    for (const set of slots.values()) expect(set.size).toBe(1);
    expect(new Set([...slots.values()].map((s) => [...s][0])).size).toBeGreaterThan(1);
  });
});
type RootNodes = Array<{ url: string }>;
const UNOPENED_CLUSTERS: Array<[string, (rootNodes: RootNodes) => NodeRedisClient]> = [
  ['node-redis', (rootNodes) => createCluster({ rootNodes })],
  ['node-redis@5', (rootNodes) => createClusterV5({ rootNodes })],
];

describe.each(UNOPENED_CLUSTERS)(
  'a node-redis cluster handed over unconnected (%s)',
  (_, create) => {
    it('is connected by the module, decides in Redis, and is closed on shutdown', async () => {
      const rootNodes = cluster().startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` }));
      // As docs/redis.md shows it: no connect(), no error listener.
      const unopened = create(rootNodes);
      const moduleRef = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({
            redis: unopened,
            keyPrefix: uniquePrefix(),
            // What the cluster decides is under test, not the fallback: on a busy machine the
            // first decisions (a master still loading the decision library, say) get time to
            // come (5 s, as the apps above, not the 100 ms default).
            timeout: 5000,
          }),
        ],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      try {
        // The module opens the client in the background and waits for it only briefly as the
        // application starts (the fallback answers until it connects): a busy machine may take
        // longer than that to reach every master and load the slot map.
        const store = primaryOf(app.get(RateLimitStore)) as RedisStore;
        await waitFor('the cluster connected by the module', 15_000, () =>
          Promise.resolve(store.connected || 'not connected'),
        );
        const decisions = [];
        for (let i = 0; i < 3; i++) {
          decisions.push(await app.get(RateLimitService).consume('unopened', { threshold: 2 }));
        }
        expect(decisions.map((d) => [d.allowed, d.degraded])).toEqual([
          [true, undefined],
          [true, undefined],
          [false, undefined],
        ]);
      } finally {
        await app.close();
      }
      expect(unopened.isOpen).toBe(false);
    });
  },
);

async function keysOn(node: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}
