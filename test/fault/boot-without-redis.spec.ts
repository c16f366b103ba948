/**
 * The application starts while Redis is down, on every documented way of connecting that can start
 * without it: within a few seconds, serving on the fallback, with a warning that says so rather
 * than a claim that the Redis store is used. Once Redis comes up, the scripts are loaded and the
 * eviction check runs (this server evicts, so it must warn), one line says limits are shared, and
 * two instances share one limit.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { RateLimitService } from '../../lib/index.js';
import { StoreNotConnectedError } from '../../lib/stores/redis/clients/script-client.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait-for.js';
import { startDocumentedApp, type WiringName } from './fixtures/documented-apps.js';
import { expectOneSharedLimit, untilShared } from './fixtures/shared-limits.js';
import { CapturingLogger, createLimiterApp } from './traffic.js';

const WIRINGS: WiringName[] = [
  'node-redis, handed over unconnected',
  'node-redis@5, handed over unconnected',
  'ioredis from a URL',
  'ioredis client of its own',
  'glide with lazyConnect',
];

// The module waits 2 s for Redis at bootstrap, and the warnings below say that it stopped
// waiting. A module that waited for the client would never start (every client retries a refused
// connection for ever): the bound rules that out, and leaves the rest to Nest's bootstrap, which
// a full run beside busy-looping processes has stretched past 12 s.
const STARTUP_MS = 30_000;

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

describe('starting while Redis is down', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    redis = await startRedis(['--maxmemory-policy', 'allkeys-lru', '--maxmemory', '256mb']);
  });
  afterAll(async () => {
    await redis.stop();
    process.off('unhandledRejection', onUnhandled);
  });

  it.each(WIRINGS)(
    '%s: starts on the fallback, and shares limits once Redis is up',
    async (name) => {
      await redis.kill('SIGKILL');
      const logger = new CapturingLogger();
      const began = performance.now();
      const [a, b] = await Promise.all([
        startDocumentedApp(name, redis.url, logger),
        startDocumentedApp(name, redis.url, logger),
      ]);
      const startupMs = performance.now() - began;
      try {
        expect(startupMs).toBeLessThan(STARTUP_MS);
        for (const { app } of [a, b]) {
          expect((await request(app.getHttpServer()).get('/hello/traffic')).status).toBe(200);
          const decision = await app.get(RateLimitService).consume('boot', { threshold: 5 });
          expect(decision).toMatchObject({ allowed: true, degraded: 'memory' });
        }
        expect(logger.messages.filter((m) => m.includes('Using the redis store'))).toEqual([]);
        // One warning per instance, saying what answers; the decisions that failed since add none.
        expect(logger.warnings).toHaveLength(2);
        // GLIDE retries a refused connection until its connectionTimeout (2 s by default), and
        // says so then: the same moment the module stops waiting, so either may come first.
        const reason = name.startsWith('glide')
          ? '(Standalone connect failed - IoError: .*|not connected within 2000ms)'
          : '.*ECONNREFUSED.*';
        for (const warning of logger.warnings) {
          expect(warning).toMatch(
            new RegExp(
              `^Redis is unreachable \\(${reason}\\); limiting per instance in memory until it connects`,
            ),
          );
        }

        await redis.restart();
        await untilShared(a.app);
        await untilShared(b.app);
        await expectOneSharedLimit(a.app, b.app);
        await waitFor('a connection line and an eviction warning per instance', 5000, async () => {
          const connected = logger.messages.filter((m) => m.startsWith('Redis connected after'));
          const evicting = logger.warnings.filter((w) =>
            w.includes('maxmemory-policy allkeys-lru'),
          );
          return (
            (connected.length === 2 && evicting.length === 2) ||
            `${connected.length} connection lines, ${evicting.length} eviction warnings`
          );
        });
        // The function library was loaded once Redis was reachable.
        const libraries = (await redis.client().call('FUNCTION', 'LIST')) as unknown[];
        expect(libraries).not.toHaveLength(0);
        expect(unhandled).toEqual([]);
      } finally {
        await a.close();
        await b.close();
      }
    },
  );

  it('asks an onStoreError handler at startup, and says what it chose', async () => {
    await redis.kill('SIGKILL');
    const logger = new CapturingLogger();
    const seen: Error[] = [];
    const app = await createLimiterApp(
      {
        redis: redis.url,
        onStoreError: (error) => {
          seen.push(error);
          return 'deny';
        },
      },
      logger,
    );
    try {
      expect(seen[0]).toBeInstanceOf(StoreNotConnectedError);
      expect(seen[0].message).toMatch(/ECONNREFUSED/);
      expect(logger.warnings).toEqual([
        expect.stringMatching(
          /^Redis is unreachable .*; denying every request with 503 until it connects/,
        ),
      ]);
      const decision = await app.get(RateLimitService).consume('boot', { threshold: 5 });
      expect(decision).toMatchObject({ allowed: false, degraded: 'deny' });
    } finally {
      await app.close();
      await redis.restart();
    }
  });
});
