/**
 * Per-policy trackers, counting only failures or successes, lock-outs and shadow mode, through a
 * real Nest app on Express and Fastify, on the memory store and on Redis.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { type RateLimitDecision, RateLimitModule } from '../../../lib/index.js';
import { type RateLimitRootOptions } from '../../../lib/options/rate-limit.options.js';
import { STORE_KINDS, useRedis } from '../../support/stores.js';
import { AbuseController, Calls, IP_HEADER, ipTracker } from './fixtures/abuse-controls.js';
import { HTTP_ADAPTERS, uniquePrefix } from './fixtures/app.js';
import { startHttpApp } from './fixtures/http-app.js';

const CASES = STORE_KINDS.flatMap((kind) =>
  HTTP_ADAPTERS.map((adapter) => [kind, adapter] as const),
);

describe.each(CASES)('abuse controls on the %s store over %s', (kind, adapter) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function boot(options: RateLimitRootOptions = {}) {
    const app = await startHttpApp(
      {
        imports: [
          RateLimitModule.forRoot({
            ...(kind === 'redis' ? { redis: redis().url } : {}),
            keyPrefix: uniquePrefix(),
            getTracker: ipTracker,
            // These count what got through: a reply slowed by a busy machine past the default
            // 100 ms would be answered by the per-instance fallback, which counts on its own.
            timeout: 2000,
            ...options,
          }),
        ],
        controllers: [AbuseController],
        providers: [Calls],
      },
      { adapter },
    );
    apps.push(app);
    return { app, calls: app.get(Calls), server: app.getHttpServer() };
  }

  it('locks an account out after three wrong passwords from many addresses, and no other', async () => {
    const { server, calls } = await boot();
    const login = (username: string, password: string, ip: string) =>
      request(server).post('/login').set(IP_HEADER, ip).send({ username, password });

    const attempts = [];
    for (let i = 0; i < 5; i++) attempts.push(await login('alice', 'guess', `10.0.0.${i}`));
    expect(attempts.map((r) => r.status)).toEqual([401, 401, 401, 429, 429]);
    expect(calls.of('login')).toBe(3);
    expect(attempts[3].headers['retry-after']).toBe('2');
    // Locked out: even the right password waits, and trying does not extend the lock-out.
    expect((await login('alice', 'right', '10.9.9.9')).status).toBe(429);

    // Another account, from the same addresses: unaffected.
    expect((await login('bob', 'guess', '10.0.0.1')).status).toBe(401);
    for (let i = 0; i < 6; i++) expect((await login('bob', 'right', '10.0.0.1')).status).toBe(200);

    // No username: the module's tracker (the address) counts, never one bucket for everyone.
    expect((await login('', 'guess', '10.0.0.7')).status).toBe(401);

    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await login('alice', 'right', '10.0.0.1')).status).toBe(200);
    expect((await login('alice', 'guess', '10.0.0.1')).status).toBe(401);
  });

  it.each([
    ['failures', '/failing', 'failing'],
    ['successes', '/succeeding', 'succeeding'],
  ])(
    'lets exactly 5 of 20 concurrent requests that count (%s) reach the handler',
    async (_mode, path, name) => {
      const { server, calls } = await boot();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => request(server).get(path).set(IP_HEADER, '10.1.1.1')),
      );
      expect(calls.of(name)).toBe(5);
      expect(responses.filter((r) => r.status === 429)).toHaveLength(15);
      // Later ones still find the quota used: the five counted and nothing was given back.
      expect((await request(server).get(path).set(IP_HEADER, '10.1.1.1')).status).toBe(429);
    },
  );

  it('never lets more than the threshold run at once, though successes are given back', async () => {
    const { app, server, calls } = await boot();
    const responses = await Promise.all(
      Array.from({ length: 30 }, () =>
        request(server).get('/overlapping').set(IP_HEADER, '10.5.5.5'),
      ),
    );
    const controller = app.get(AbuseController);
    expect(controller.mostAtOnce).toBeLessThanOrEqual(5);
    expect(calls.of('overlapping')).toBe(responses.filter((r) => r.status === 200).length);
    expect(calls.of('overlapping')).toBeGreaterThanOrEqual(5);
    // Every success was given back: the quota is whole again.
    for (let i = 0; i < 5; i++) {
      expect((await request(server).get('/overlapping').set(IP_HEADER, '10.5.5.5')).status).toBe(
        200,
      );
    }
  });

  it('gives back what does not count: failures under successes, successes under failures', async () => {
    const { server, calls } = await boot();
    const get = (path: string) => request(server).get(path).set(IP_HEADER, '10.2.2.2');
    for (let i = 0; i < 6; i++) expect((await get('/signup?fail=1')).status).toBe(400);
    expect((await get('/signup')).status).toBe(200);
    expect((await get('/signup')).status).toBe(200);
    expect((await get('/signup')).status).toBe(429);
    expect(calls.of('signup')).toBe(8);
  });

  it('shadow: lets through what the trial policy would reject, tells onLimited, and shows only the enforced one', async () => {
    const limited: RateLimitDecision[] = [];
    const { server } = await boot({ onLimited: (_ctx, decision) => limited.push(decision) });
    const responses = [];
    for (let i = 0; i < 5; i++) {
      responses.push(await request(server).get('/trial').set(IP_HEADER, '10.3.3.3'));
    }
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 429]);
    expect(responses[2].headers['ratelimit-policy']).toBe('"enforced";q=4;w=60');
    expect(responses[2].headers['ratelimit']).toBe('"enforced";r=1;t=60');
    // The trial policy rejected the third and fourth; the enforced one rejected the fifth.
    expect(limited.map((d) => d.shadow === true)).toEqual([true, true, false]);
    expect(limited[0].policies.map((p) => [p.policy.name, p.allowed])).toEqual([
      ['enforced', true],
      ['trial', false],
    ]);
  });

  it('module shadow: true turns nobody away, and tells onLimited of everyone it would have', async () => {
    const limited: RateLimitDecision[] = [];
    const { server } = await boot({
      shadow: true,
      onLimited: (_ctx, decision) => limited.push(decision),
    });
    const statuses = [];
    for (let i = 0; i < 7; i++) {
      statuses.push((await request(server).get('/trial').set(IP_HEADER, '10.4.4.4')).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
    // Trial rejects from the third on, and the enforced policy (shadowed too) from the fifth.
    expect(limited).toHaveLength(5);
    expect(limited.every((d) => d.shadow === true && d.allowed)).toBe(true);
  });
});
