/**
 * A slow link: Redis runs a decision in time, but its reply arrives after the caller's timeout, so
 * the fallback answered the caller while Redis counted the request. Through a proxy that adds
 * 60 ms each way against a 100 ms timeout, every reply is late. What Redis counts beyond the
 * decisions it answered is measured here, and must stay within the bound the docs give.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type RateLimitDecision,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitService,
} from '../../lib/index.js';
import { CLIENT_KINDS, openClient } from '../support/clients.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { unitsIn } from '../support/weighted-sets.js';
import { sleep } from './traffic.js';
import { stateKeys } from '../support/decision-ids.js';
import { waitFor } from '../support/wait-for.js';

const DELAY_MS = 60;
const TIMEOUT_MS = 100;
const RUN_MS = 3000;
const WORKERS = 8;
// A sliding log: one member per request it counted, so the count is exact.
const ROOMY: RateLimitPolicy = { period: '1h', threshold: 1_000_000 };

describe.each(CLIENT_KINDS)(`late replies, ${DELAY_MS} ms each way (%s)`, (kind) => {
  let redis: TestRedis;
  let proxy: TcpProxy;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    redis = await startRedis();
    proxy = await startTcpProxy(redis.port);
  });
  afterEach(async () => {
    proxy.delay(0);
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    await proxy.close();
    await redis.stop();
  });

  type Ask = (limiter: RateLimitService) => Promise<RateLimitDecision>;
  const CASES: Array<[what: string, ask: Ask]> = [
    ['consume, sliding window', (limiter) => limiter.consume('victim', ROOMY)],
    [
      // A reservation that also takes a concurrency lease: the lease is freed, the count refunded.
      'acquire, sliding window and concurrency',
      (limiter) => limiter.acquire('victim', [ROOMY, { ...ROOMY, algorithm: 'concurrency' }]),
    ],
  ];

  it.each(CASES)(
    'counts in Redis no request that the fallback answered (%s)',
    async (what, ask) => {
      const prefix = `slow-${kind.replace(/\W/g, '')}-${Date.now()}`;
      const client = await openClient(kind, { host: '127.0.0.1', port: proxy.port });
      const ref = await Test.createTestingModule({
        imports: [
          RateLimitModule.forRoot({ redis: client, keyPrefix: prefix, timeout: TIMEOUT_MS }),
        ],
      }).compile();
      app = ref.createNestApplication({ logger: false });
      await app.init();
      const limiter = app.get(RateLimitService);
      // Redis answers before the link is slowed: on a loaded machine the very first decision can
      // outlast the timeout, which says nothing about late replies.
      await waitFor('a decision answered by Redis', 5000, async () =>
        (await limiter.consume('warm', ROOMY)).degraded === undefined
          ? true
          : 'the fallback answered',
      );

      proxy.delay(DELAY_MS);
      const decisions: RateLimitDecision[] = [];
      const begin = performance.now();
      const worker = async () => {
        while (performance.now() - begin < RUN_MS) {
          decisions.push(await ask(limiter));
          await sleep(2);
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
      proxy.delay(0);
      // Let the last late replies, and whatever they cause, reach Redis.
      await sleep(4 * DELAY_MS + 500);

      // Every key the decisions wrote, and the units each still counts (a sliding log's requests,
      // the leases held).
      const keys = stateKeys(await redis.shared.keys(`${prefix}:{victim}*`));
      const fromRedis = decisions.filter((d) => d.degraded === undefined).length;
      for (const key of keys) {
        const counted = await unitsIn(redis.shared, key);
        const excess = counted - fromRedis;
        console.log(
          `${kind}, ${what}: ${decisions.length} decisions in ${RUN_MS} ms, ${fromRedis} answered ` +
            `from Redis; ${key.slice(prefix.length)} counts ${counted}: ${excess} that the fallback answered`,
        );
        expect(excess).toBe(0);
      }
      expect(decisions.length).toBeGreaterThan(0);
    },
  );

  it('gives back a late reply even when the give-back itself is slower than the timeout', async () => {
    const prefix = `slow-giveback-${kind.replace(/\W/g, '')}-${Date.now()}`;
    const client = await openClient(kind, { host: '127.0.0.1', port: proxy.port });
    const ref = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: client, keyPrefix: prefix, timeout: TIMEOUT_MS })],
    }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    const limiter = app.get(RateLimitService);
    // Learns Redis's clock, so that decisions carry their answer deadline.
    expect((await limiter.consume('warm', ROOMY)).degraded).toBeUndefined();

    // The first decisions on a slow link may still be answered from Redis; the first one the
    // fallback answers is the one whose give-back is watched.
    let victim: string | undefined;
    for (let attempt = 0; attempt < 10 && victim === undefined; attempt++) {
      proxy.delay(DELAY_MS);
      // Once the request is on its way and Redis has replied, the link slows down further: the
      // reply is late, and so is the give-back it causes, by more than the timeout.
      const slower = sleep(DELAY_MS + 10).then(() => proxy.delay(2.5 * TIMEOUT_MS));
      const decision = await limiter.consume(`victim-${attempt}`, ROOMY);
      await slower;
      if (decision.degraded === 'memory') victim = `victim-${attempt}`;
      await sleep(2 * DELAY_MS + 5 * TIMEOUT_MS);
    }
    expect(victim).toBeDefined();
    proxy.delay(0);
    await sleep(100);

    // Given back, the request leaves nothing counted: its sliding log is empty, and so gone.
    const keys = stateKeys(await redis.shared.keys(`${prefix}:{${victim}}*`));
    const counted = await Promise.all(keys.map((key) => unitsIn(redis.shared, key)));
    expect(counted.reduce((a, b) => a + b, 0)).toBe(0);
  });
});
