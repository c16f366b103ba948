/**
 * A decision the fallback answered must never be counted in Redis afterwards. Both client
 * libraries queue commands while disconnected by default, and a paused server runs the commands
 * it held once the pause ends: either would count those requests a second time. Each case builds
 * its client with the library's defaults only, as an application that never tuned it would.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type RateLimitDecision,
  RateLimitModule,
  RedisStore,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { useRedis } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { unitsIn } from '../support/weighted-sets.js';
import { sleep } from './traffic.js';

const POLICY: RateLimitPolicy = { period: '1h', threshold: 100 };

describe.each(CLIENT_KINDS)('no decision runs after the fallback answered it (%s)', (kind) => {
  const redis = useRedis('redis');
  let app: INestApplication | undefined;
  let prefix = '';

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function boot(as: 'redis' | 'store' = 'redis'): Promise<RateLimitService> {
    prefix = `late-${kind.replace(/\W/g, '')}-${Date.now()}`;
    const client = await redis().connect(kind, { libraryDefaults: true });
    const connection = as === 'redis' ? { redis: client } : { store: new RedisStore({ client }) };
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ ...connection, keyPrefix: prefix, timeout: 100 })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    return app.get(RateLimitService);
  }

  /** What Redis has counted for the key `victim`. */
  async function victimCount(): Promise<number> {
    const [key] = await redis().shared.keys(`${prefix}:{victim}:0:*`);
    return key === undefined ? 0 : unitsIn(redis().shared, key);
  }

  async function untilShared(limiter: RateLimitService): Promise<void> {
    await waitFor('a decision shared through Redis again', 15_000, async () => {
      const probe = await limiter.consume('probe', POLICY);
      return probe.degraded === undefined ? true : `degraded: ${probe.degraded}`;
    });
  }

  it('while Redis is down, sends nothing, so a restart replays nothing', async () => {
    const limiter = await boot();
    await redis().kill('SIGKILL');
    const during: RateLimitDecision[] = [];
    for (let i = 0; i < 20; i++) during.push(await limiter.consume('victim', POLICY));
    expect(during.every((d) => d.allowed && d.degraded === 'memory')).toBe(true);

    await redis().restart();
    await untilShared(limiter);
    // Give a queue that was going to be replayed every chance to be.
    await sleep(500);
    // The server came back empty; only the probes that found it back have been counted since.
    expect(await redis().client().keys(`${prefix}:{victim}*`)).toEqual([]);

    // Shared limiting goes on from an empty count.
    const after = await limiter.consume('victim', POLICY);
    expect(after).toMatchObject({ allowed: true, remaining: 99 });
    expect(after.degraded).toBeUndefined();
  });

  it.each(['redis', 'store'] as const)(
    'while Redis is paused, the commands it runs afterwards record nothing (client as %s)',
    async (as) => {
      const limiter = await boot(as);
      // The first decisions load the script and may miss 100 ms on a busy machine; the fallback
      // would answer them. The two counted below must be Redis's.
      await untilShared(limiter);
      for (let i = 0; i < 2; i++) await limiter.consume('victim', POLICY);
      expect(await victimCount()).toBe(2);

      await redis().client().client('PAUSE', 1000);
      const during = await Promise.all(
        Array.from({ length: 10 }, () => limiter.consume('victim', POLICY)),
      );
      expect(during.every((d) => d.degraded === 'memory')).toBe(true);

      await sleep(1000);
      await untilShared(limiter);
      await sleep(200);
      // The two made before the pause, and nothing from the decisions sent during it.
      expect(await victimCount()).toBe(2);
    },
  );
});
