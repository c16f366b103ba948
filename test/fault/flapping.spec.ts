/**
 * A server that fails and recovers over and over, for a couple of seconds: one warning when the
 * trouble starts and one line once it has answered for a second without a failure, however often
 * failures and successes alternate in between. The recovery line counts the fallback's answers.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { type Redis } from 'ioredis';
import { type RedisConnection } from '../../lib/index.js';
import { type TestRedis } from '../support/redis-server.js';
import { useRedis } from '../support/stores.js';
import { CapturingLogger, createLimiterApp, exactness, runTraffic, sleep } from './traffic.js';
import { inTier } from '../support/matrix.js';

const TIMEOUT_MS = 100;
const FLAPPING_MS = 2000;

interface Flap {
  name: string;
  /** Makes the server fail and recover alternately for {@link FLAPPING_MS}. */
  flap(admin: Redis): Promise<void>;
}

const FLAPS: Flap[] = [
  {
    // A server at its memory cap refuses writes (OOM) or takes them as memory comes and goes.
    name: 'maxmemory below what is used (noeviction) for 10 ms of every 40 ms',
    flap: async (admin) => {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const until = performance.now() + FLAPPING_MS;
      try {
        while (performance.now() < until) {
          await admin.config('SET', 'maxmemory', '1');
          await sleep(10);
          await admin.config('SET', 'maxmemory', '0');
          await sleep(30);
        }
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
    },
  },
  {
    // Paused longer than the timeout, then free for a moment, again and again.
    name: 'CLIENT PAUSE 150 ms every 250 ms',
    flap: async (admin) => {
      const until = performance.now() + FLAPPING_MS;
      while (performance.now() < until) {
        await admin.client('PAUSE', 150);
        await sleep(250);
      }
    },
  },
];

/** How the module reaches Redis: a URL (the module builds an ioredis client), or a client handed over. */
const CONNECTIONS: Array<[label: string, connect: (redis: TestRedis) => Promise<RedisConnection>]> =
  inTier([
    ['ioredis from a URL', async (redis) => redis.url],
    ['node-redis client', (redis) => redis.connect('node-redis') as Promise<RedisConnection>],
    ['GLIDE client', (redis) => redis.connect('glide') as Promise<RedisConnection>],
  ]);

const rows: string[] = [];

afterAll(() => {
  process.stdout.write(
    `\nFlapping server (timeout ${TIMEOUT_MS} ms, ${FLAPPING_MS} ms of flapping):\n` +
      '| client | fault | decisions | answered by the fallback | warnings | recovery lines |\n' +
      `|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
});

describe.each(CONNECTIONS)('a flapping server, %s', (client, connect) => {
  const redis = useRedis('redis');
  let app: INestApplication | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each(FLAPS.map((f) => [f.name, f] as const))('%s', async (name, { flap }) => {
    const logger = new CapturingLogger();
    app = await createLimiterApp(
      { redis: await connect(redis()), timeout: TIMEOUT_MS, keyPrefix: `flap-${rows.length}` },
      logger,
    );
    const done = (async () => {
      await sleep(300);
      await flap(redis().client());
      // Steady again until the outage is seen over (a second without a failure), and no longer: a
      // stall of a busy machine afterwards would start another outage, with its own warning.
      const until = performance.now() + 3000;
      while (!logger.messages.some((m) => m.includes('recovered')) && performance.now() < until) {
        await sleep(20);
      }
    })();
    const { samples } = await runTraffic(
      app,
      done.then(
        () => undefined,
        () => undefined,
      ),
    );
    await done;

    const fellBack = samples.filter((s) => s.degraded !== undefined).length;
    const recoveries = logger.messages.filter((m) => m.includes('recovered'));
    rows.push(
      `| ${client} | ${name} | ${samples.length} | ${fellBack} | ${logger.warnings.length} | ${recoveries.length} |`,
    );

    expect(samples.filter((s) => s.error !== undefined)).toEqual([]);
    // The server did flap: decisions fell back, and others were made on Redis in between.
    expect(fellBack).toBeGreaterThan(0);
    const duringFlap = samples.filter((s) => s.at > 400 && s.at < 300 + FLAPPING_MS - 100);
    expect(duringFlap.some((s) => s.degraded === undefined)).toBe(true);
    expect(logger.warnings).toHaveLength(1);
    expect(recoveries).toHaveLength(1);
    // What the fallback answered during the outage, which every degraded answer was part of but
    // those this process held back past their deadlines before it began (on a busy machine, a
    // few): they failed alone, and no outage counts them.
    const counted = Number(/the fallback answered (\d+) decisions/.exec(recoveries[0])?.[1]);
    expect(counted).toBeLessThanOrEqual(fellBack);
    expect(counted).toBeGreaterThanOrEqual(fellBack * 0.98);
    expect(await exactness(app, 5, 8)).toEqual({ allowed: 5, degraded: 0 });
  });
});
