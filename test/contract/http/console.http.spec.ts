/**
 * The console's API through a real Nest app, on both stores and both HTTP adapters: the guard in
 * front of everything, the most limited trackers against exact counts, a tracker looked up,
 * blocked, lifted and reset, overrides set and cleared, the refusals naming the field, and two
 * instances sharing one Redis.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  Injectable,
} from '@nestjs/common';
import request from 'supertest';
import { RateLimitModule } from '../../../lib/index.js';
import { RateLimitConsoleModule } from '../../../lib/console/index.js';
import { ActivitySharing } from '../../../lib/console/activity-sharing.js';
import { DecisionFeed } from '../../../lib/activity/decision-feed.js';
import { STORE_KINDS, type StoreKind, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import {
  HTTP_ADAPTERS,
  type HttpAdapterKind,
  startHttpApp,
  USER_HEADER,
} from './fixtures/http-app.js';
import { OverrideController } from './fixtures/override-controllers.js';
import { statusesOf } from './fixtures/policy-app.js';

const ADMIN = { 'x-admin': 'let-me-in' };

/** Lets through the requests that carry the admin header, as an app's own admin guard would. */
@Injectable()
class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const headers = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string> }>().headers;
    return headers['x-admin'] === ADMIN['x-admin'];
  }
}

describe.each(STORE_KINDS)('the console on the %s store', (kind: StoreKind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function start(adapter: HttpAdapterKind, keyPrefix = uniquePrefix()) {
    const app = await startHttpApp(
      {
        imports: [
          RateLimitModule.forRoot({
            keyPrefix,
            ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
          }),
          RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
        ],
        controllers: [OverrideController],
      },
      { adapter },
    );
    apps.push(app);
    const server = app.getHttpServer();
    const admin = {
      get: (path: string) => request(server).get(`/rate-limits${path}`).set(ADMIN),
      post: (path: string, body?: object) =>
        request(server).post(`/rate-limits${path}`).set(ADMIN).send(body),
      put: (path: string, body?: object) =>
        request(server).put(`/rate-limits${path}`).set(ADMIN).send(body),
      delete: (path: string) => request(server).delete(`/rate-limits${path}`).set(ADMIN),
    };
    const call = (path: string, user: string) => request(server).get(path).set(USER_HEADER, user);
    const calls = async (path: string, user: string, n: number) => {
      const out = [];
      for (let i = 0; i < n; i++) out.push(await call(path, user));
      return out;
    };
    return { app, server, admin, call, calls, keyPrefix };
  }

  describe.each(HTTP_ADAPTERS)('on %s', (adapter) => {
    it('answers nothing but the refusal without the guard’s credentials', async () => {
      const { server } = await start(adapter);
      for (const path of ['', '/api/top', '/api/health', '/api/overrides', '/api/trackers/x']) {
        const response = await request(server).get(`/rate-limits${path}`);
        expect(response.status).toBe(403);
        expect(JSON.stringify(response.body)).not.toMatch(/tracker|store|override/i);
      }
      const blocked = await request(server)
        .post('/rate-limits/api/trackers/x/block')
        .send({ duration: '1m' });
      expect(blocked.status).toBe(403);
    });

    it('serves one self-contained page', async () => {
      const { admin } = await start(adapter);
      const page = await admin.get('');
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toMatch(/<canvas id="chart"/);
      // Nothing fetched from elsewhere: no script, style or image from another origin.
      expect(page.text).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    });

    it('lists the flooding tracker first, with exact counts on one instance, and charts the outcomes', async () => {
      const { admin, calls } = await start(adapter);
      const [flooder, other] = [uniqueUser(), uniqueUser()];
      expect(statusesOf(await calls('/ov/api', flooder, 13))).toEqual([
        ...Array(3).fill(200),
        ...Array(10).fill(429),
      ]);
      expect(statusesOf(await calls('/ov/api', other, 5))).toEqual([200, 200, 200, 429, 429]);

      const top = await admin.get('/api/top?window=60');
      expect(top.status).toBe(200);
      // The memory store lives in the process: its console says it shows this instance alone.
      expect(top.body).toMatchObject(
        kind === 'redis'
          ? { instances: 'all' }
          : { instances: 'this one', reason: 'the store is in this process' },
      );
      expect(top.body.trackers).toEqual([
        expect.objectContaining({
          tracker: `user:${flooder}`,
          route: 'GET /ov/api',
          policy: 'api',
          limited: 10,
          error: 0,
        }),
        expect.objectContaining({
          tracker: `user:${other}`,
          route: 'GET /ov/api',
          policy: 'api',
          limited: 2,
          error: 0,
        }),
      ]);
      expect(top.body.trackers[0].lastLimitedAt).toBeLessThanOrEqual(Date.now());

      const rates = await admin.get('/api/rates');
      const route = rates.body.routes.find((r: { route: string }) => r.route === 'GET /ov/api');
      const total = (values: number[]) =>
        values.reduce((a, b) => a + b, 0) * (rates.body.bucketMs / 1000);
      expect(total(route.allowed)).toBeCloseTo(6);
      expect(total(route.limited)).toBeCloseTo(12);
      expect(total(route.degraded)).toBe(0);
    });

    it('looks a tracker up, blocks it, lifts the block and resets it', async () => {
      const { admin, call, calls } = await start(adapter);
      const user = uniqueUser();
      const tracker = `user:${user}`;
      await calls('/ov/api', user, 1);
      await calls('/ov/untouched', uniqueUser(), 1);

      const looked = await admin.get(`/api/trackers/${encodeURIComponent(tracker)}`);
      expect(looked.status).toBe(200);
      expect(looked.body.policies).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            route: 'GET /ov/api',
            policy: 'api',
            limit: 3,
            remaining: 2,
            blockedForMs: 0,
          }),
          expect.objectContaining({
            route: 'GET /ov/untouched',
            policy: 'untouched',
            limit: 2,
            remaining: 2,
            blockedForMs: 0,
          }),
        ]),
      );

      const blocked = await admin.post(`/api/trackers/${encodeURIComponent(tracker)}/block`, {
        duration: '10m',
        policy: 'api',
      });
      expect(blocked.status).toBe(200);
      expect(blocked.body.policies).toEqual([{ route: 'GET /ov/api', policy: 'api' }]);
      expect((await call('/ov/api', user)).status).toBe(429);
      expect((await call('/ov/untouched', user)).status).toBe(200);
      const during = await admin.get(`/api/trackers/${encodeURIComponent(tracker)}`);
      const api = during.body.policies.find((p: { policy: string }) => p.policy === 'api');
      expect(api.blockedForMs).toBeGreaterThan(9 * 60_000);
      expect(api.blockedForMs).toBeLessThanOrEqual(10 * 60_000);

      const lifted = await admin.delete(`/api/trackers/${encodeURIComponent(tracker)}/block`);
      expect(lifted.status).toBe(200);
      expect(statusesOf(await calls('/ov/api', user, 4))).toEqual([200, 200, 200, 429]);

      expect((await admin.post(`/api/trackers/${encodeURIComponent(tracker)}/reset`)).status).toBe(
        200,
      );
      expect((await call('/ov/api', user)).status).toBe(200);
    });

    it('sets, lists and clears overrides, which the routes apply', async () => {
      const { admin, calls } = await start(adapter);
      const user = uniqueUser();
      const set = await admin.put('/api/overrides/api', {
        threshold: 5,
        tracker: `user:${user}`,
        ttl: '1h',
      });
      expect(set.status).toBe(200);
      expect(set.body.overrides).toEqual([
        expect.objectContaining({ policy: 'api', tracker: `user:${user}`, threshold: 5 }),
      ]);
      expect(statusesOf(await calls('/ov/api', user, 6))).toEqual([200, 200, 200, 200, 200, 429]);
      const cleared = await admin.delete(
        `/api/overrides/api?tracker=${encodeURIComponent(`user:${user}`)}`,
      );
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({ cleared: true, overrides: [] });
    });

    it('answers bad input with 400 naming the field, never 500', async () => {
      const { admin, calls } = await start(adapter);
      await calls('/ov/api', uniqueUser(), 1);
      const cases: [Promise<request.Response>, string][] = [
        [admin.get('/api/top?window=61'), 'window'],
        [admin.post('/api/trackers/x/block', { duration: 'soon' }), 'duration'],
        [admin.post('/api/trackers/x/block', { duration: '0s' }), 'duration'],
        [admin.post('/api/trackers/x/block', { duration: '1m', policy: 'nope' }), 'policy'],
        [admin.post('/api/trackers/x/block', { duration: '1m', until: 'later' }), 'until'],
        [admin.put('/api/overrides/nope', { threshold: 5 }), 'policy'],
        [admin.put('/api/overrides/api', { threshold: -1 }), 'threshold'],
        [admin.put('/api/overrides/api', { threshold: 5, tracker: 'x'.repeat(1025) }), 'tracker'],
        [admin.delete(`/api/overrides/api?tracker=${'x'.repeat(1025)}`), 'tracker'],
      ];
      if (adapter === 'express') {
        // Fastify answers 404 to a path parameter past its maxParamLength (100) before any handler.
        cases.push([admin.get(`/api/trackers/${'x'.repeat(1025)}`), 'tracker']);
      }
      for (const [pending, field] of cases) {
        const response = await pending;
        expect({ field, status: response.status, body: response.body }).toEqual({
          field,
          status: 400,
          // The message names the console's route, then the field.
          body: expect.objectContaining({
            field,
            message: expect.stringMatching(
              new RegExp(`^(GET|POST|PUT|DELETE) /rate-limits/api/[^ ]+: .*\\b${field}\\b`),
            ),
          }),
        });
      }
    });
  });

  if (kind === 'redis') {
    it('shows on one instance who floods another, and acts on every instance', async () => {
      const keyPrefix = uniquePrefix();
      const a = await start('express', keyPrefix);
      const b = await start('fastify', keyPrefix);
      const flooder = uniqueUser();
      const tracker = `user:${flooder}`;
      await a.calls('/ov/api', flooder, 8);
      await a.calls('/ov/api', uniqueUser(), 4);

      await waitFor('the flood on the other instance', 10_000, async () => {
        const top = await b.admin.get('/api/top?window=60');
        const first = top.body.trackers[0];
        return first?.tracker === tracker && first.limited === 5 ? true : JSON.stringify(top.body);
      });

      // B never served the route: it acts on it from what A shared. A caller within its quota,
      // blocked from B, is turned away by A; lifted from B, it is let through by A.
      const calm = uniqueUser();
      expect((await a.call('/ov/api', calm)).status).toBe(200);
      const path = `/api/trackers/${encodeURIComponent(`user:${calm}`)}/block`;
      const blocked = await b.admin.post(path, { duration: '5m' });
      expect(blocked.body.policies).toEqual([{ route: 'GET /ov/api', policy: 'api' }]);
      expect((await a.call('/ov/api', calm)).status).toBe(429);
      expect((await b.admin.delete(path)).status).toBe(200);
      // A holds a block it saw for at most MAX_LOCAL_BLOCK_MS before asking Redis again.
      await waitFor('the lifted block on the other instance', 10_000, async () => {
        const status = (await a.call('/ov/api', calm)).status;
        return status === 200 || `status ${status}`;
      });

      const other = uniqueUser();
      await b.admin.put('/api/overrides/api', { threshold: 1 });
      await waitFor('the override on the other instance', 10_000, async () => {
        const statuses = statusesOf(await a.calls('/ov/api', other, 1));
        return statuses[0] === 429 || `status ${statuses[0]}`;
      });
    });
  }
});

describe('the console’s options', () => {
  it('refuses to start without a guard, naming the option', () => {
    expect(() => RateLimitConsoleModule.forRoot({})).toThrow(
      /RateLimitConsoleModule\.forRoot: guard must be a guard/,
    );
    expect(() => RateLimitConsoleModule.forRoot({ guard: {} as never })).toThrow(
      /guard must be a CanActivate/,
    );
    expect(() => RateLimitConsoleModule.forRoot({ guard: AdminGuard, pth: '/x' } as never)).toThrow(
      /unknown field "pth" \(did you mean "path"\?\)/,
    );
    expect(() => RateLimitConsoleModule.forRoot({ guard: AdminGuard, path: '/:id' })).toThrow(
      /path must be/,
    );
  });

  it('takes allowUnauthenticated for local development, and refuses it in production', () => {
    const before = process.env.NODE_ENV;
    try {
      process.env.NODE_ENV = 'development';
      expect(() => RateLimitConsoleModule.forRoot({ allowUnauthenticated: true })).not.toThrow();
      process.env.NODE_ENV = 'production';
      expect(() => RateLimitConsoleModule.forRoot({ allowUnauthenticated: true })).toThrow(
        /allowUnauthenticated must be left out when NODE_ENV is production/,
      );
    } finally {
      process.env.NODE_ENV = before;
    }
  });

  it('logs each action with the acting user, under RateLimitConsole', async () => {
    const lines: string[] = [];
    const collect = (message: unknown, context?: unknown) => {
      if (context === 'RateLimitConsole') lines.push(String(message));
    };
    const logger = { log: collect, warn: collect, error: collect, debug() {}, verbose() {} };
    const app = await startHttpApp(
      {
        imports: [
          RateLimitModule.forRoot({ keyPrefix: uniquePrefix() }),
          RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
        ],
        controllers: [OverrideController],
      },
      { logger },
    );
    try {
      const server = app.getHttpServer();
      const as = (user?: string) => (test: request.Test) =>
        (user === undefined ? test : test.set(USER_HEADER, user)).set(ADMIN);
      await request(server).get('/ov/api').set(USER_HEADER, 'caller');
      const path = '/rate-limits/api/trackers/user%3Acaller';
      await as('alice')(request(server).post(`${path}/block`)).send({ duration: '10m' });
      await as('alice')(request(server).delete(`${path}/block`));
      await as('bob')(request(server).post(`${path}/reset`));
      await as('bob')(request(server).put('/rate-limits/api/overrides/api')).send({ threshold: 9 });
      await as()(request(server).delete('/rate-limits/api/overrides/api'));
      expect(lines).toEqual([
        'User "alice" blocked tracker "user:caller" for 10m under every policy',
        'User "alice" lifted the blocks of tracker "user:caller"',
        'User "bob" reset tracker "user:caller"',
        'User "bob" set the override of policy "api" for every tracker: {"threshold":9}',
        'An unnamed user cleared the override of policy "api" for every tracker',
      ]);
    } finally {
      await app.close();
    }
  });

  it('answers 501 naming the method when a store of your own has none for the action', async () => {
    const allowAll = {
      consume: async () => ({
        allowed: true,
        limit: 3,
        remaining: 2,
        resetAfterMs: 60_000,
        retryAfterMs: 0,
        policies: [],
      }),
    };
    const app = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({ keyPrefix: uniquePrefix(), store: allowAll as never }),
        RateLimitConsoleModule.forRoot({ guard: AdminGuard }),
      ],
      controllers: [OverrideController],
    });
    try {
      const server = app.getHttpServer();
      expect((await request(server).get('/ov/api').set(USER_HEADER, 'u')).status).toBe(200);
      const looked = await request(server).get('/rate-limits/api/trackers/user%3Au').set(ADMIN);
      expect(looked.status).toBe(501);
      expect(looked.body.message).toMatch(/has no peek\(\) method, which this action needs/);
      const blocked = await request(server)
        .post('/rate-limits/api/trackers/user%3Au/block')
        .set(ADMIN)
        .send({ duration: '1m' });
      expect(blocked.status).toBe(501);
    } finally {
      await app.close();
    }
  });

  it('shares nothing and keeps the feed off in an app without it', async () => {
    const app = await startHttpApp({
      imports: [RateLimitModule.forRoot({ keyPrefix: uniquePrefix() })],
      controllers: [OverrideController],
    });
    try {
      await request(app.getHttpServer()).get('/ov/api').set(USER_HEADER, uniqueUser());
      expect(app.get(DecisionFeed).active).toBe(false);
      expect(app.get(DecisionFeed).directory.known()).toEqual([]);
      expect(() => app.get(ActivitySharing)).toThrow();
    } finally {
      await app.close();
    }
  });
});
