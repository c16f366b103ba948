/**
 * A Redis that evicts keys when full drops rate-limit keys with everything else, and every key it
 * drops resets a limit or a lock-out without a word. Under the `volatile-*` policies the module's
 * keys, which all have a TTL, go first. So the module warns at bootstrap, once, when the server
 * it uses (or any master of a cluster) can evict them, and says nothing under `noeviction`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RateLimitModule,
  RateLimitService,
  type RateLimitModuleOptions,
  type RedisConnection,
  RedisStore,
} from '../../lib/index.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { startCluster, type TestCluster } from '../support/redis-cluster.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { asUserWithout } from '../support/acl-users.js';

const EVICTING = [
  'allkeys-lru',
  'allkeys-lfu',
  'allkeys-random',
  'volatile-lru',
  'volatile-lfu',
  'volatile-random',
  'volatile-ttl',
];
const DOCS = 'nest-rate-limit/docs/redis.md#eviction';

/** What the module logs under the `RateLimit` context, debug lines included. */
class Logs implements LoggerService {
  readonly warnings: string[] = [];
  readonly debugs: string[] = [];
  log() {}
  warn(message: unknown, context?: string) {
    if (context === 'RateLimit') this.warnings.push(String(message));
  }
  debug(message: unknown, context?: string) {
    if (context === 'RateLimit') this.debugs.push(String(message));
  }
  error() {}
  verbose() {}
  get eviction(): string[] {
    return this.warnings.filter((w) => w.includes('maxmemory-policy'));
  }
}

/** Boots the module on `options`, makes one decision, and returns what it logged. */
async function boot(options: RateLimitModuleOptions): Promise<Logs> {
  const logs = new Logs();
  Logger.overrideLogger(logs);
  const ref = await Test.createTestingModule({
    // A first decision on a busy machine may outlast the default 100 ms, and the fallback would
    // answer it: what this checks is that Redis decides, not how fast.
    imports: [
      RateLimitModule.forRoot({ timeout: 5000, ...options, keyPrefix: `evict-${randomUUID()}` }),
    ],
  }).compile();
  const app = ref.createNestApplication({ logger: logs });
  await app.init();
  try {
    const decision = await app.get(RateLimitService).consume('probe', { threshold: 5 });
    expect(decision.degraded).toBeUndefined();
  } finally {
    await app.close();
  }
  return logs;
}

describe.each([...EVICTING, 'noeviction'])('maxmemory-policy %s', (policy) => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis(['--maxmemory-policy', policy, '--maxmemory', '256mb']);
  });
  afterAll(async () => {
    await redis.stop();
  });

  it.each(CLIENT_KINDS)(
    `${policy === 'noeviction' ? 'warns of nothing' : 'warns once, with the docs'} (%s client)`,
    async (kind) => {
      const logs = await boot({ redis: (await redis.connect(kind)) as RedisConnection });
      if (policy === 'noeviction') {
        expect(logs.eviction).toEqual([]);
      } else {
        expect(logs.eviction).toHaveLength(1);
        expect(logs.eviction[0]).toContain(`(maxmemory-policy ${policy})`);
        expect(logs.eviction[0]).toContain(DOCS);
      }
    },
  );
});

describe('eviction warning, other ways in', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis(['--maxmemory-policy', 'volatile-lru', '--maxmemory', '256mb']);
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('warns for a client the module creates from a URL, and for a RedisStore handed over', async () => {
    expect((await boot({ redis: redis.url })).eviction).toHaveLength(1);
    const store = new RedisStore({ client: await redis.connect('ioredis') });
    expect((await boot({ store })).eviction).toHaveLength(1);
  });

  it('warns of nothing while maxmemory is 0, under which nothing is evicted', async () => {
    const admin = redis.client();
    await admin.config('SET', 'maxmemory', '0');
    try {
      expect((await boot({ redis: redis.url })).eviction).toEqual([]);
    } finally {
      await admin.config('SET', 'maxmemory', '256mb');
    }
  });

  it.each(CLIENT_KINDS)(
    'says one debug line, and no warning, where CONFIG is refused (%s client)',
    async (kind) => {
      // Everything but CONFIG, as a managed service or a strict ACL allows.
      await asUserWithout(redis.shared, ['-config'], async (user) => {
        const logs = await boot({
          redis: (await redis.connect(kind, { user })) as RedisConnection,
        });
        expect(logs.eviction).toEqual([]);
        const unread = logs.debugs.filter((d) => d.includes('maxmemory-policy'));
        expect(unread).toHaveLength(1);
        expect(unread[0]).toMatch(/NOPERM/);
        expect(unread[0]).toContain(DOCS);
      });
    },
  );
});

describe('eviction warning on a cluster', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ replicas: 0, own: true });
    // One master of three evicts; the check must look at each.
    const [, second] = await cluster.masters();
    const admin = cluster.admin(second);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await admin.config('SET', 'maxmemory', '256mb');
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it.each(CLIENT_KINDS)('names the masters that evict (%s client)', async (kind) => {
    const logs = await boot({ redis: (await cluster.connect(kind)) as RedisConnection });
    expect(logs.eviction).toHaveLength(1);
    expect(logs.eviction[0]).toContain('(maxmemory-policy allkeys-lru on 1 of 3 masters)');
  });
});
