/**
 * The console while its Redis is stopped, on two instances: an action the store's fallback took
 * says it reached this instance alone; an instance that knows no route, the others' being
 * unreadable, answers 503 and does nothing; the overrides answer 503 rather than 500; the health
 * and the top list still answer, saying whose figures they are.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  Injectable,
} from '@nestjs/common';
import request from 'supertest';
import { RateLimitModule } from '../../lib/index.js';
import { RateLimitConsoleModule } from '../../lib/console/index.js';
import { uniquePrefix, uniqueUser } from '../contract/http/fixtures/app.js';
import { startHttpApp, USER_HEADER } from '../contract/http/fixtures/http-app.js';
import { OverrideController } from '../contract/http/fixtures/override-controllers.js';
import { startRedis, type TestRedis } from '../support/redis-server.js';

const ADMIN = { 'x-admin': 'on-call' };

@Injectable()
class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const { headers } = context.switchToHttp().getRequest<{ headers: Record<string, string> }>();
    return headers['x-admin'] === ADMIN['x-admin'];
  }
}

describe('the console while Redis is stopped, on two instances', () => {
  let redis: TestRedis;
  let a: INestApplication;
  let b: INestApplication;
  const user = uniqueUser();
  const tracker = encodeURIComponent(`user:${user}`);

  beforeAll(async () => {
    redis = await startRedis();
    const keyPrefix = uniquePrefix();
    const app = () =>
      startHttpApp({
        imports: [
          RateLimitModule.forRoot({ keyPrefix, redis: redis.url }),
          RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
        ],
        controllers: [OverrideController],
      });
    [a, b] = await Promise.all([app(), app()]);
    // A decides on the route, so knows it; B never does.
    const first = await request(a.getHttpServer()).get('/ov/api').set(USER_HEADER, user);
    expect(first.status).toBe(200);
    await redis.stop();
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  const admin = (app: INestApplication) => ({
    get: (path: string) => request(app.getHttpServer()).get(`/rate-limits${path}`).set(ADMIN),
    post: (path: string, body?: object) =>
      request(app.getHttpServer()).post(`/rate-limits${path}`).set(ADMIN).send(body),
    put: (path: string, body?: object) =>
      request(app.getHttpServer()).put(`/rate-limits${path}`).set(ADMIN).send(body),
  });

  it('says a block the fallback took reached this instance alone', async () => {
    const blocked = await admin(a).post(`/api/trackers/${tracker}/block`, { duration: '1m' });
    expect({ status: blocked.status, body: blocked.body }).toEqual({
      status: 200,
      body: {
        tracker: `user:${user}`,
        blockedForMs: 60_000,
        policies: [{ route: 'GET /ov/api', policy: 'api' }],
        instances: 'this one',
        reason: expect.stringContaining('fallback'),
      },
    });
    const looked = await admin(a).get(`/api/trackers/${tracker}`);
    expect(looked.body).toMatchObject({
      instances: 'this one',
      policies: [{ degraded: 'memory' }],
    });
  });

  it('answers 503 and does nothing where it knows no route and cannot read the others’', async () => {
    for (const pending of [
      admin(b).post(`/api/trackers/${tracker}/block`, { duration: '1m' }),
      admin(b).post(`/api/trackers/${tracker}/reset`),
    ]) {
      const response = await pending;
      expect(response.status).toBe(503);
      expect(response.body.message).toMatch(
        /^POST \/rate-limits\/api\/trackers\/:tracker\/(block|reset): this instance knows no route to act on, .*: nothing was done$/,
      );
    }
  });

  it('answers 503 for the overrides, and still answers the health and the top list', async () => {
    const read = await admin(a).get('/api/overrides');
    expect(read.status).toBe(503);
    expect(read.body.message).toMatch(/^GET \/rate-limits\/api\/overrides: the store could not/);
    const set = await admin(a).put('/api/overrides/api', { threshold: 5 });
    expect(set.status).toBe(503);
    expect(set.body.message).toMatch(/the override was not set$/);

    const health = await admin(a).get('/api/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'up', degraded: true, fallback: 'memory' });
    const top = await admin(b).get('/api/top?window=60');
    expect(top.status).toBe(200);
    expect(top.body).toMatchObject({ instances: 'this one', reason: expect.any(String) });
  });
});
