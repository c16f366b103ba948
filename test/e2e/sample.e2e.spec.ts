import { type GlideClient } from '@valkey/valkey-glide';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimitStore, RedisStore } from '../../lib/index.js';
import { type NodeRedisClient } from '../../lib/stores/redis/clients/node-redis.client.js';
import { AppModule } from '../../sample/app.module.js';
import { startMetrics } from '../../sample/metrics.js';
import { primaryOf, useRedis } from '../support/stores.js';
import { stateKeys } from '../support/decision-ids.js';
import { type CallTaking, watchSettles } from '../support/settles.js';
import '../support/glide-logger.js';
import { inTier } from '../support/matrix.js';

describe('the sample app', () => {
  let app: INestApplication;
  const saved = process.env.REDIS_URL;

  beforeAll(async () => {
    delete process.env.REDIS_URL;
    startMetrics();
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await app.close();
    if (saved !== undefined) process.env.REDIS_URL = saved;
  });

  it('answers the third quick GET /hello/sayHi with 429 and Retry-After', async () => {
    const server = app.getHttpServer();
    const codes = [];
    for (let i = 0; i < 2; i++) codes.push((await request(server).get('/hello/sayHi')).status);
    const third = await request(server).get('/hello/sayHi');
    expect([...codes, third.status]).toEqual([200, 200, 429]);
    expect(Number(third.headers['retry-after'])).toBeGreaterThanOrEqual(29);
  });

  it('limits /items/:id as one route, shares its budget with /items, and leaves /items/health alone', async () => {
    const server = app.getHttpServer();
    const codes = [];
    for (let id = 1; id <= 11; id++) codes.push((await request(server).get(`/items/${id}`)).status);
    expect(codes.slice(0, 10).every((c) => c === 200)).toBe(true);
    expect(codes[10]).toBe(429);
    // One budget for the controller: the list has none left either.
    expect((await request(server).get('/items')).status).toBe(429);
    for (let i = 0; i < 15; i++)
      expect((await request(server).get('/items/health')).status).toBe(200);
  });

  it('locks an account out of /auth/login after five wrong passwords, and only that account', async () => {
    const server = app.getHttpServer();
    const login = (username: string, password: string) =>
      request(server).post('/auth/login').send({ username, password });
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await login('ann', 'guess')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    expect((await login('ann', 'open-sesame')).status).toBe(429);
    for (let i = 0; i < 7; i++) expect((await login('bob', 'open-sesame')).status).toBe(200);
  });

  it('counts those decisions on /metrics through OpenTelemetry, without limiting /metrics itself', async () => {
    const server = app.getHttpServer();
    const res = await request(server).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/^# TYPE rate_limit_decisions_total counter$/m);
    // Every series of one route and outcome, summed over the other labels.
    const count = (route: string, outcome: string) =>
      res.text
        .split('\n')
        .filter(
          (line) =>
            line.startsWith('rate_limit_decisions_total{') &&
            line.includes(`rate_limit_route="${route}"`) &&
            line.includes(`rate_limit_outcome="${outcome}"`),
        )
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    expect(count('GET /hello/sayHi', 'allowed')).toBe(2);
    expect(count('GET /hello/sayHi', 'limited')).toBe(1);
    expect(count('GET /items/:id', 'allowed')).toBe(10);
    expect(count('GET /items/:id', 'limited')).toBe(1);
    expect(count('GET /items', 'limited')).toBe(1);
    expect(count('POST /auth/login', 'allowed')).toBe(12);
    expect(count('POST /auth/login', 'limited')).toBe(2);
    expect(res.text).toMatch(
      /^rate_limit_decisions_total\{rate_limit_route="GET \/hello\/sayHi",rate_limit_policy="[^"]+",rate_limit_algorithm="sliding-window",rate_limit_store="memory",rate_limit_outcome="limited"(,[^}]*)?\} 1$/m,
    );
    // The second of two, the tenth of ten, the fifth of five left under a tenth of the limit.
    expect(res.text).toMatch(/^# TYPE rate_limit_near_limit_total counter$/m);
    for (const route of ['GET /hello/sayHi', 'GET /items/:id', 'POST /auth/login']) {
      expect(res.text).toMatch(
        new RegExp(`^rate_limit_near_limit_total\\{rate_limit_route="${route}",.*\\} 1$`, 'm'),
      );
    }
    expect(res.text).not.toMatch(/metrics"|\/metrics/);
    // Scraping again counts nothing: /metrics itself is not limited.
    const again = await request(server).get('/metrics');
    expect(again.text).not.toMatch(/\/metrics/);
  });
  it('runs two exports at once per client, and frees both leases when they finish', async () => {
    const server = app.getHttpServer();
    const runs = await Promise.all([1, 2, 3].map(() => request(server).post('/exports')));
    const statuses = runs.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 201, 429]);
    expect(runs.find((r) => r.status === 429)!.headers['retry-after']).toBe('1');
    const next = await request(server).post('/exports');
    expect(next.status).toBe(201);
    expect(next.headers['ratelimit']).toBe('"2-at-once";r=1');
    expect(next.headers['ratelimit-policy']).toBe('"2-at-once";q=2;qu="concurrent-requests"');
  });

  it('answers GET /health through Terminus, never limited, on the memory store', async () => {
    const server = app.getHttpServer();
    for (let i = 0; i < 3; i++) {
      const res = await request(server).get('/health');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
      expect(res.body).toMatchObject({
        status: 'ok',
        details: {
          'rate-limit': { status: 'up', store: 'memory', reachable: true, degraded: false },
        },
      });
    }
  });

  it('holds a burst of /quotes for its turns, 200 ms apart, instead of answering 429', async () => {
    const server = app.getHttpServer();
    const started = Date.now();
    const burst = await Promise.all([1, 2, 3, 4, 5].map(() => request(server).get('/quotes')));
    expect(burst.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const at = burst.map((r) => Date.parse((r.body as { at: string }).at)).sort((a, b) => a - b);
    // The k-th turn is booked 200 ms after the one before, the first no sooner than the burst
    // was sent: no request runs before its turn. (A gap between two runs measures the timers
    // too: one that fired late leaves a short gap after it on a busy machine.)
    for (let i = 1; i < at.length; i++)
      expect(at[i] - started).toBeGreaterThanOrEqual(200 * i - 10);
  });

  it('limits /chat/completions by the tokens each user spends: the estimate up front, then what the model used', async () => {
    const { settled } = watchSettles(app.get<CallTaking>(RateLimitStore));
    const server = app.getHttpServer();
    const ask = (user: string, prompt: string, maxTokens: number) =>
      request(server)
        .post('/chat/completions')
        .set('X-User', user)
        .send({ prompt, max_tokens: maxTokens });
    const first = await ask('ada', 'hello there model', 500);
    expect(first.status).toBe(201);
    expect(first.body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(first.headers.ratelimit).toMatch(/^"tokens";r=9497;t=\d+$/);
    expect(first.headers['ratelimit-policy']).toMatch(/^"tokens";q=10000;w=86400$/);
    await settled(1);
    const second = await ask('ada', 'hello there model', 500);
    expect(second.headers.ratelimit).toMatch(/^"tokens";r=9491;/);
    // Another user has a budget of their own: 1 + 4096 tokens reserved from 10,000.
    expect((await ask('grace', 'hi', 4096)).headers.ratelimit).toMatch(/^"tokens";r=5903;/);
    await settled(3);
    const summary = await request(server)
      .post('/chat/summaries')
      .set('X-User', 'ada')
      .send({ prompt: 'a long text', max_tokens: 100 });
    expect(summary.status).toBe(201);
    expect(summary.body.usage.total_tokens).toBe(8); // "summarise: a long text", and back
  });

  it('changes a limit at runtime through its admin route, for holders of the admin token only', async () => {
    const server = app.getHttpServer();
    const saved = process.env.ADMIN_TOKEN;
    process.env.ADMIN_TOKEN = 'sample-test-token';
    try {
      const admin = (req: request.Test, token = 'sample-test-token') =>
        req.set('X-Admin-Token', token);
      const raise = { threshold: 5, ttl: '1h' };
      const post = (policy: string, body: object) =>
        admin(request(server).post(`/admin/limits/${policy}`)).send(body);

      expect((await request(server).post('/admin/limits/2-per-30s').send(raise)).status).toBe(403);
      expect(
        (await admin(request(server).post('/admin/limits/2-per-30s'), 'guess').send(raise)).status,
      ).toBe(403);

      // This client's two calls are used up (by the first test, or here).
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await request(server).get('/hello/sayHi')).status);
      expect(statuses).toContain(429);
      const set = await post('2-per-30s', raise);
      expect(set.status).toBe(201);
      expect(set.body).toEqual([
        expect.objectContaining({
          policy: '2-per-30s',
          threshold: 5,
          expiresInMs: expect.any(Number),
        }),
      ]);
      const raised = [];
      for (let i = 0; i < 4; i++) raised.push(await request(server).get('/hello/sayHi'));
      expect(raised.map((r) => r.status)).toEqual([200, 200, 200, 429]);
      expect(raised[0].headers['ratelimit-policy']).toBe('"2-per-30s";q=5;w=30');

      const unknown = await post('2-per-31s', raise);
      expect(unknown.status).toBe(400);
      expect(unknown.body.message).toMatch(/did you mean "2-per-30s"\?/);
      const bad = await post('2-per-30s', { threshold: -1 });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/threshold must be an integer from 1 to 1000000000, got -1/);
      const long = 'x'.repeat(2000);
      const tooLong = await post('2-per-30s', { threshold: 5, tracker: long });
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.message).toBe(
        'RateLimitService.override: tracker must be at most 1024 characters, got 2000',
      );
      const clearTooLong = await admin(
        request(server).delete(`/admin/limits/2-per-30s?tracker=${long}`),
      );
      expect(clearTooLong.status).toBe(400);
      expect(clearTooLong.body.message).toMatch(/tracker must be at most 1024 characters/);

      const listed = await admin(request(server).get('/admin/limits'));
      expect(listed.body).toHaveLength(1);
      const cleared = await admin(request(server).delete('/admin/limits/2-per-30s'));
      expect(cleared.body).toEqual({ cleared: true });
      const back = await request(server).get('/hello/sayHi');
      expect(back.status).toBe(429);
      expect(back.headers['ratelimit-policy']).toBe('"2-per-30s";q=2;w=30');
    } finally {
      if (saved === undefined) delete process.env.ADMIN_TOKEN;
      else process.env.ADMIN_TOKEN = saved;
    }
  });

  it('serves the console at /rate-limits behind the admin token, as Basic or X-Admin-Token', async () => {
    const server = app.getHttpServer();
    const saved = process.env.ADMIN_TOKEN;
    process.env.ADMIN_TOKEN = 'sample-test-token';
    try {
      const refused = await request(server).get('/rate-limits');
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Basic realm="rate limits"');
      expect(refused.text).not.toMatch(/<html/);
      const wrong = await request(server).get('/rate-limits').auth('admin', 'guess');
      expect(wrong.status).toBe(401);

      const page = await request(server).get('/rate-limits').auth('admin', 'sample-test-token');
      expect(page.status).toBe(200);
      expect(page.text).toMatch(/<title>Rate limits<\/title>/);
      // The earlier tests turned this client away on /hello/sayHi: it is on the list.
      const top = await request(server)
        .get('/rate-limits/api/top?window=900')
        .set('X-Admin-Token', 'sample-test-token');
      expect(top.status).toBe(200);
      expect(top.body.trackers).toContainEqual(
        expect.objectContaining({ route: 'GET /hello/sayHi', policy: '2-per-30s' }),
      );
    } finally {
      if (saved === undefined) delete process.env.ADMIN_TOKEN;
      else process.env.ADMIN_TOKEN = saved;
    }
  });
});

describe.each(
  inTier([
    ['ioredis', undefined],
    ['node-redis', 'node-redis'],
    ['valkey-glide', 'glide'],
  ]),
)('the sample app on Redis through %s', (library, clientVariable) => {
  const redis = useRedis('redis');
  const saved = { url: process.env.REDIS_URL, client: process.env.REDIS_CLIENT };
  let app: INestApplication;

  beforeAll(async () => {
    process.env.REDIS_URL = redis().url;
    if (clientVariable === undefined) delete process.env.REDIS_CLIENT;
    else process.env.REDIS_CLIENT = clientVariable;
    const ref = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    const store = primaryOf(app.get(RateLimitStore)) as RedisStore;
    await app.close();
    // The sample hands its node-redis client over unconnected: the module connected it, and
    // closed it.
    if (library === 'node-redis') expect((store.client as NodeRedisClient).isOpen).toBe(false);
    // So does its GLIDE client, created with lazyConnect.
    if (library === 'valkey-glide') {
      await expect((store.client as GlideClient).ping()).rejects.toThrow(/closed/);
    }
    for (const [name, value] of [
      ['REDIS_URL', saved.url],
      ['REDIS_CLIENT', saved.client],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('shares its limits through Redis', async () => {
    const store = primaryOf(app.get(RateLimitStore));
    expect(store).toBeInstanceOf(RedisStore);
    expect((store as RedisStore).library).toBe(library);
    const server = app.getHttpServer();
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await request(server).get('/hello/sayHi')).status);
    expect(codes).toEqual([200, 200, 429]);
    expect(stateKeys(await redis().client().keys('rate-limit:{GET /hello/sayHi|*'))).toHaveLength(
      1,
    );
  });

  it('reports Redis on GET /health', async () => {
    const res = await request(app.getHttpServer()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body.details['rate-limit']).toMatchObject({
      status: 'up',
      store: 'redis',
      library,
      decisionsRunAs: 'functions',
      reachable: true,
      degraded: false,
      breaker: 'closed',
      failingNodes: 0,
    });
  });
});
