/**
 * Overrides across instances: two Nest apps on one redis-server, each with its own client, follow
 * what the other sets and clears, through the change notices, and through the periodic reading
 * where a notice cannot arrive (subscriber connections killed). An instance that starts later has
 * the overrides in force at once.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import request from 'supertest';
import { RateLimitModule, RateLimitService } from '../../lib/index.js';
import { type ClientKind } from '../support/clients.js';
import { useRedis } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';
import { startHttpApp, USER_HEADER } from '../contract/http/fixtures/http-app.js';
import { OverrideController } from '../contract/http/fixtures/override-controllers.js';
import { policiesOf } from '../contract/http/fixtures/policy-app.js';
import { inTier } from '../support/matrix.js';

const REFRESH_MS = 500;
// A notice arrives in a few ms; a second leaves room for a loaded machine.
const NOTICE_MS = 1000;

describe.each<[ClientKind, ClientKind]>(
  inTier<[ClientKind, ClientKind]>([
    ['ioredis', 'node-redis'],
    ['node-redis', 'iovalkey'],
    // GLIDE resubscribes by itself after a lost connection, without a word: what was published
    // meanwhile reaches it on the periodic reading alone.
    ['ioredis', 'glide'],
  ]),
)('overrides shared by two instances, %s and %s', (kindA, kindB) => {
  const redis = useRedis('redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function instance(kind: ClientKind, keyPrefix: string) {
    const app = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({
          redis: await redis().connect(kind),
          keyPrefix,
          overrideRefresh: `${REFRESH_MS}ms`,
        }),
      ],
      controllers: [OverrideController],
    });
    apps.push(app);
    const get = (user: string) =>
      request(app.getHttpServer()).get('/ov/api').set(USER_HEADER, user);
    /** The limit this instance applies to `user` now, as `RateLimit-Policy` shows it. */
    const limit = async (user: string) => policiesOf(await get(user))[0].q;
    return { app, service: app.get(RateLimitService), get, limit };
  }

  /** Waits until `limit(user)` is `expected`, within `ms`. */
  const converges = (
    limit: (user: string) => Promise<unknown>,
    user: string,
    expected: number,
    ms: number,
  ) =>
    waitFor(`limit ${expected}`, ms, async () => {
      const q = await limit(user);
      return q === expected || `q=${String(q)}`;
    });

  it('a change on one instance is enforced on the other within a second, both ways', async () => {
    const prefix = `ov-${randomUUID().slice(0, 8)}`;
    const [a, b] = [await instance(kindA, prefix), await instance(kindB, prefix)];
    await a.service.override('api', { threshold: 7 });
    await converges(b.limit, randomUUID(), 7, NOTICE_MS);
    const user = randomUUID();
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await b.get(user)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 429]);

    expect(await b.service.clearOverride('api')).toBe(true);
    await converges(a.limit, randomUUID(), 3, NOTICE_MS);
  });

  it("one tracker's override reaches the other instance, for that tracker only", async () => {
    const prefix = `ov-${randomUUID().slice(0, 8)}`;
    const [a, b] = [await instance(kindA, prefix), await instance(kindB, prefix)];
    const [vip, other] = [randomUUID(), randomUUID()];
    await a.service.override('api', { threshold: 5 }, { tracker: `user:${vip}` });
    await converges(b.limit, vip, 5, NOTICE_MS);
    expect(await b.limit(other)).toBe(3);
    expect(await b.service.overrides()).toEqual([
      { policy: 'api', tracker: `user:${vip}`, threshold: 5 },
    ]);
  });

  it('an instance whose subscriber connection was killed still follows within the refresh period', async () => {
    const prefix = `ov-${randomUUID().slice(0, 8)}`;
    const [a, b] = [await instance(kindA, prefix), await instance(kindB, prefix)];
    await a.service.override('api', { threshold: 7 });
    await converges(b.limit, randomUUID(), 7, NOTICE_MS);

    const admin = new Redis(redis().url);
    try {
      const killed = await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      expect(Number(killed)).toBeGreaterThanOrEqual(2);
      await a.service.override('api', { threshold: 9 });
      await converges(b.limit, randomUUID(), 9, REFRESH_MS + NOTICE_MS);
      // And once its subscriber is back, notices reach it again.
      await a.service.override('api', { threshold: 11 });
      await converges(b.limit, randomUUID(), 11, NOTICE_MS);
    } finally {
      admin.disconnect();
    }
  });

  it('an instance that starts (or restarts) later has the overrides in force at once, and both see one end on time', async () => {
    const prefix = `ov-${randomUUID().slice(0, 8)}`;
    const a = await instance(kindA, prefix);
    await a.service.override('api', { threshold: 8 });
    await a.service.override('untouched', { threshold: 4 }, { ttl: '1s' });
    const b = await instance(kindB, prefix);
    // No waiting: read at startup.
    expect(await b.limit(randomUUID())).toBe(8);
    const untouched = async (app: INestApplication) =>
      policiesOf(
        await request(app.getHttpServer()).get('/ov/untouched').set(USER_HEADER, randomUUID()),
      )[0].q;
    expect(await untouched(b.app)).toBe(4);
    for (const app of [a.app, b.app]) {
      await waitFor('the ttl to end', 1000 + NOTICE_MS, async () => {
        const q = await untouched(app);
        return q === 2 || `q=${String(q)}`;
      });
    }
    expect(await b.limit(randomUUID())).toBe(8);
  });
});
