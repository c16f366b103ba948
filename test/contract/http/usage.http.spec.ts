/** Route policies that settle what a request used, and calendar windows, over HTTP on every store. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RateLimitModule, RateLimitStore } from '../../../lib/index.js';
import { useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { type CallTaking, watchSettles } from '../../support/settles.js';
import { STORES_AND_ADAPTERS, uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { limitsOf, policiesOf } from './fixtures/policy-app.js';
import { ESTIMATE_HEADER, UsageController, USED_HEADER } from './fixtures/usage-controllers.js';

describe.each(STORES_AND_ADAPTERS)(
  'settling usage on routes, on the %s store over %s',
  (kind, adapter) => {
    const redis = useRedis(kind);
    const apps: INestApplication[] = [];
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });

    async function app() {
      const created = await startHttpApp(
        {
          imports: [
            RateLimitModule.forRoot({
              keyPrefix: uniquePrefix(),
              ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
            }),
          ],
          controllers: [UsageController],
        },
        { adapter },
      );
      apps.push(created);
      return { app: created, ...watchSettles(created.get<CallTaking>(RateLimitStore)) };
    }

    const call = (
      a: INestApplication,
      path: string,
      user: string,
      estimate: number,
      used: number,
    ) =>
      request(a.getHttpServer())
        .get(path)
        .set(USER_HEADER, user)
        .set(ESTIMATE_HEADER, String(estimate))
        .set(USED_HEADER, String(used));

    it('charges what the handler reports in place of the estimate, giving back the rest', async () => {
      const { app: a, settled } = await app();
      const user = uniqueUser();
      const first = await call(a, '/usage/result', user, 30, 10);
      expect(first.status).toBe(200);
      expect(limitsOf(first)[0].r).toBe(70); // the estimate
      await settled(1);
      const second = await call(a, '/usage/result', user, 30, 45);
      expect(limitsOf(second)[0].r).toBe(60); // 10 used, then this estimate
      await settled(2);
      // 10 + 45 used: 45 left, so an estimate of 46 no longer fits.
      expect((await call(a, '/usage/result', user, 46, 0)).status).toBe(429);
      const fits = await call(a, '/usage/result', user, 45, 45);
      expect(fits.status).toBe(200);
      expect(limitsOf(fits)[0].r).toBe(0);
    });

    it('charges more than the estimate past the limit, as a debt the next requests wait out', async () => {
      const { app: a, settled } = await app();
      const user = uniqueUser();
      expect((await call(a, '/usage/result', user, 10, 150)).status).toBe(200);
      await settled(1);
      const next = await call(a, '/usage/result', user, 1, 1);
      expect(next.status).toBe(429);
      expect(limitsOf(next)[0].r).toBe(0);
      expect(Number(next.headers['retry-after'])).toBeGreaterThan(0);
    });

    it('reads what was used from a header the handler set (token bucket)', async () => {
      const { app: a, settled } = await app();
      const user = uniqueUser();
      expect((await call(a, '/usage/header', user, 50, 5)).status).toBe(200);
      await settled(1);
      const next = await call(a, '/usage/header', user, 50, 5);
      // 5 used and 50 reserved; the bucket refills meanwhile, so at least that many are left.
      expect(limitsOf(next)[0].r).toBeGreaterThanOrEqual(45);
      expect(limitsOf(next)[0].r).toBeLessThanOrEqual(46);
    });

    it('keeps the estimate of a request whose handler failed, or whose settle returned nonsense', async () => {
      const { app: a } = await app();
      const user = uniqueUser();
      expect((await call(a, '/usage/failing', user, 40, 0)).status).toBe(502);
      expect(limitsOf(await call(a, '/usage/failing', user, 40, 0))[0].r).toBe(20);
      expect((await call(a, '/usage/nonsense', user, 40, 0)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect(limitsOf(await call(a, '/usage/nonsense', user, 40, 0))[0].r).toBe(20);
    });

    it('a calendar day shows its real window in RateLimit-Policy and its real reset', async () => {
      const { app: a } = await app();
      const res = await request(a.getHttpServer())
        .get('/usage/daily')
        .set(USER_HEADER, uniqueUser());
      expect(res.status).toBe(200);
      expect(policiesOf(res)[0]).toMatchObject({ name: '1000-per-day', q: 1000, w: 86400 });
      const now = Date.now();
      const midnight = Date.UTC(
        new Date(now).getUTCFullYear(),
        new Date(now).getUTCMonth(),
        new Date(now).getUTCDate() + 1,
      );
      const t = limitsOf(res)[0].t as number;
      expect(Math.abs(t - Math.ceil((midnight - now) / 1000))).toBeLessThanOrEqual(2);
    });
  },
);
