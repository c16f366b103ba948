/**
 * Redis is killed under HTTP traffic, on every way of connecting that the README and docs show,
 * the node-redis client its owner connected first among them: that client had no `error`
 * listener, so a lost connection used to end the process. Every request must be answered (by the
 * fallback meanwhile), nothing may reach the process as an uncaught error, and once Redis is back
 * on the same port two instances must share one limit again. The module must also let go of the
 * clients it was handed: no listener left on a client that outlives it, and a client it connected
 * itself closed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { RedisStore } from '../../lib/index.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startDocumentedApp, type WiringName } from './fixtures/documented-apps.js';
import { expectOneSharedLimit, httpTraffic, untilShared } from './fixtures/shared-limits.js';
import { CapturingLogger, createLimiterApp, sleep } from './traffic.js';

const WIRINGS: WiringName[] = [
  'node-redis, connected by its owner',
  'node-redis@5, connected by its owner',
  'node-redis, handed over unconnected',
  'ioredis from a URL',
  'ioredis client of its own',
  'glide, connected by its owner',
  'glide with lazyConnect',
];

const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => uncaught.push(error);
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

describe('Redis killed under traffic', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUnhandled);
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
  });

  it.each(WIRINGS)(
    '%s: every request is answered, and limits are shared again after a restart',
    async (name) => {
      const logger = new CapturingLogger();
      const a = await startDocumentedApp(name, redis.url, logger);
      const b = await startDocumentedApp(name, redis.url, logger);
      try {
        await untilShared(a.app);
        await untilShared(b.app);
        const outage = (async () => {
          await sleep(300);
          await redis.kill('SIGKILL');
          await sleep(1000);
          await redis.restart();
          // Traffic goes on until the instance under it decides in Redis again.
          await untilShared(a.app);
          await sleep(200);
        })();
        const traffic = await httpTraffic(
          a.app,
          outage.catch(() => undefined),
        );
        await outage;

        expect(traffic.requests).toBeGreaterThan(20);
        expect([...traffic.statuses]).toEqual([[200, traffic.requests]]);
        await untilShared(b.app);
        await expectOneSharedLimit(a.app, b.app);
        // The restarted server is empty: keys there are decisions made after the outage.
        expect(await redis.client().keys('rate-limit:*')).not.toHaveLength(0);
        // At most one warning per instance for the outage, not one per failed connection.
        const warnings = logger.warnings.filter((w) => w.includes('rate-limit store failed'));
        expect(warnings.length).toBeGreaterThanOrEqual(1);
        expect(warnings.length).toBeLessThanOrEqual(2);
        expect(uncaught).toEqual([]);
        expect(unhandled).toEqual([]);
      } finally {
        await a.close();
        await b.close();
      }
    },
  );

  it('leaves no listener on a client its owner keeps', async () => {
    const nodeRedis = createClient({ url: redis.url });
    nodeRedis.on('error', () => {});
    await nodeRedis.connect();
    const ioredis = new Redis(redis.url);
    await ioredis.ping();
    try {
      const handedOver = [
        { client: nodeRedis, options: { redis: nodeRedis } },
        { client: ioredis, options: { redis: ioredis } },
        { client: ioredis, options: { store: new RedisStore({ client: ioredis }) } },
      ];
      for (const { client, options } of handedOver) {
        const before = client.listenerCount('error');
        const app = await createLimiterApp({ ...options, timeout: 100 }, new CapturingLogger());
        expect(client.listenerCount('error')).toBe(before + 1);
        await app.close();
        expect(client.listenerCount('error')).toBe(before);
      }
      expect(await nodeRedis.ping()).toBe('PONG');
      expect(await ioredis.ping()).toBe('PONG');
    } finally {
      await nodeRedis.close();
      ioredis.disconnect();
    }
  });

  it('closes a node-redis client it connected itself', async () => {
    const client = createClient({ url: redis.url });
    const app = await createLimiterApp({ redis: client, timeout: 100 }, new CapturingLogger());
    expect(client.isReady).toBe(true);
    await app.close();
    expect(client.isOpen).toBe(false);
  });
});
