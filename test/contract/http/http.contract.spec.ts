import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { parseList } from 'structured-headers';
import request from 'supertest';
import { type HeaderMode } from '../../../lib/transports/http-headers.js';
import { type RateLimitRootOptions } from '../../../lib/options/rate-limit.options.js';
import { useRedis } from '../../support/stores.js';
import {
  createApp,
  HTTP_ADAPTERS,
  STORES_AND_ADAPTERS,
  uniquePrefix,
  uniqueUser,
  USER_HEADER,
} from './fixtures/app.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(STORES_AND_ADAPTERS)('HTTP contract on the %s store over %s', (kind, adapter) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];

  async function app(options: RateLimitRootOptions = {}): Promise<INestApplication> {
    const created = await createApp(
      {
        keyPrefix: uniquePrefix(),
        ...(kind === 'redis' ? { redis: redis().url } : {}),
        ...options,
      },
      { adapter },
    );
    apps.push(created);
    return created;
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  function get(a: INestApplication, path: string, user = 'someone') {
    return request(a.getHttpServer()).get(path).set(USER_HEADER, user);
  }

  async function statuses(a: INestApplication, path: string, n: number, user: string) {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await get(a, path, user)).status);
    return out;
  }

  it("follows the seed's scenario: period 30, threshold 2 gives 200, 200, then 429 with Retry-After", async () => {
    const a = await app();
    const user = uniqueUser();
    const first = await get(a, '/hello/sayHi', user);
    const second = await get(a, '/hello/sayHi', user);
    const third = await get(a, '/hello/sayHi', user);

    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(third.body).toEqual({ statusCode: 429, message: 'Too Many Requests' });
    const retryAfter = Number(third.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(29);
    expect(retryAfter).toBeLessThanOrEqual(30);
    expect(first.headers['retry-after']).toBeUndefined();
  });

  it('sends IETF RateLimit-Policy and RateLimit headers that parse as structured fields', async () => {
    const a = await app();
    const user = uniqueUser();
    const responses = [];
    for (let i = 0; i < 3; i++) responses.push(await get(a, '/hello/sayHi', user));

    for (const res of responses) {
      const [[policyName, policyParams]] = parseList(res.headers['ratelimit-policy'] as string);
      expect(policyName).toBe('2-per-30s');
      expect(Object.fromEntries(policyParams)).toEqual({ q: 2, w: 30 });
    }
    const limits = responses.map((res) => {
      const [[name, params]] = parseList(res.headers['ratelimit'] as string);
      expect(name).toBe('2-per-30s');
      return { r: params.get('r'), t: params.get('t') };
    });
    expect(limits.map((l) => l.r)).toEqual([1, 0, 0]);
    for (const { t } of limits) {
      expect(t).toBeGreaterThanOrEqual(29);
      expect(t).toBeLessThanOrEqual(30);
    }
    expect(responses[0].headers['x-ratelimit-limit']).toBeUndefined();
  });

  it.each<[HeaderMode, string[], string[]]>([
    ['legacy', ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'], ['ratelimit']],
    ['both', ['x-ratelimit-limit', 'ratelimit', 'ratelimit-policy'], []],
    ['none', [], ['ratelimit', 'ratelimit-policy', 'x-ratelimit-limit']],
  ])('headers: %s', async (mode, present, absent) => {
    const a = await app({ headers: mode });
    const user = uniqueUser();
    const ok = await get(a, '/hello/sayHi', user);
    for (const h of present) expect(ok.headers[h]).toBeDefined();
    for (const h of absent) expect(ok.headers[h]).toBeUndefined();
    if (mode !== 'none') {
      const remaining = ok.headers['x-ratelimit-remaining'];
      if (remaining !== undefined) expect(remaining).toBe('1');
    }
    await get(a, '/hello/sayHi', user);
    const rejected = await get(a, '/hello/sayHi', user);
    expect(rejected.status).toBe(429);
    expect(rejected.headers['retry-after']).toBeDefined();
  });

  it('lets exactly 10 of 100 concurrent requests through a threshold of 10', async () => {
    const a = await app();
    const user = uniqueUser();
    const results = await Promise.all(Array.from({ length: 100 }, () => get(a, '/burst', user)));
    const ok = results.filter((r) => r.status === 200).length;
    const limited = results.filter((r) => r.status === 429).length;
    expect([ok, limited]).toEqual([10, 90]);
  });

  it('keeps users apart and routes apart', async () => {
    const a = await app();
    const alice = uniqueUser();
    const bob = uniqueUser();
    expect(await statuses(a, '/hello/sayHi', 3, alice)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/hello/sayHi', 3, bob)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/burst', 2, alice)).toEqual([200, 200]);
  });

  it('falls back to the client IP when there is no user', async () => {
    const a = await app();
    const anonymous = () => request(a.getHttpServer()).get('/hello/sayHi');
    expect((await anonymous()).status).toBe(200);
    expect((await anonymous()).status).toBe(200);
    expect((await anonymous()).status).toBe(429);
    expect((await get(a, '/hello/sayHi', uniqueUser())).status).toBe(200);
  });

  it('makes path parameters share one limit: /items/1, /items/2 and /items/3 are one route', async () => {
    const a = await app();
    const user = uniqueUser();
    const codes = [];
    for (const id of ['1', '2', '3', '4', 'other'])
      codes.push((await get(a, `/items/${id}`, user)).status);
    expect(codes).toEqual([200, 200, 200, 429, 429]);
  });

  it('counts HEAD against the GET limit of the same route, and other methods apart', async () => {
    const a = await app();
    const user = uniqueUser();
    const head = () => request(a.getHttpServer()).head('/items/9').set(USER_HEADER, user);
    expect((await head()).status).toBe(200);
    expect((await get(a, '/items/8', user)).status).toBe(200);
    expect((await head()).status).toBe(200);
    expect((await get(a, '/items/7', user)).status).toBe(429);
    const post = () => request(a.getHttpServer()).post('/items/1').set(USER_HEADER, user);
    expect([(await post()).status, (await post()).status]).toEqual([201, 429]);
  });

  it('applies a class-level limit to each method, lets a method-level limit replace it, and honours skips', async () => {
    const a = await app();
    const user = uniqueUser();
    expect(await statuses(a, '/limited/a', 3, user)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/limited/b', 3, user)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/limited/override', 5, user)).toEqual([200, 200, 200, 200, 429]);
    const free = await statuses(a, '/limited/free', 6, user);
    expect(free).toEqual([200, 200, 200, 200, 200, 200]);
    expect((await get(a, '/limited/free', user)).headers['ratelimit']).toBeUndefined();
    expect(await statuses(a, '/skipped', 5, user)).toEqual([200, 200, 200, 200, 200]);
    expect(await statuses(a, '/skipped/limited', 2, user)).toEqual([200, 429]);
  });

  it('leaves routes without @RateLimit alone: no limit, no headers', async () => {
    const a = await app();
    const user = uniqueUser();
    const codes = await statuses(a, '/open', 20, user);
    expect(codes.every((c) => c === 200)).toBe(true);
    const res = await get(a, '/open', user);
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });

  it('slides the window: a 400ms period frees a slot once the oldest request is 400ms old', async () => {
    const a = await app();
    const user = uniqueUser();
    expect(await statuses(a, '/short', 3, user)).toEqual([200, 200, 429]);
    await sleep(450);
    expect(await statuses(a, '/short', 3, user)).toEqual([200, 200, 429]);
  });

  it('does not count rejected requests: hammering while limited does not extend the block', async () => {
    const a = await app();
    const user = uniqueUser();
    expect(await statuses(a, '/short', 2, user)).toEqual([200, 200]);
    const limitedAt = performance.now();
    const hammer = await statuses(a, '/short', 10, user);
    // Every one is turned away while the window holds the two; on a machine slow enough to spend
    // the 400 ms on them, the first that comes after it is let in, as the window says.
    if (performance.now() - limitedAt < 400) expect(hammer.every((c) => c === 429)).toBe(true);
    else expect(hammer[0]).toBe(429);
    await sleep(450);
    expect((await get(a, '/short', user)).status).toBe(200);
  });

  it('uses a custom getTracker', async () => {
    const a = await app({ getTracker: () => 'everyone' });
    expect((await get(a, '/hello/sayHi', uniqueUser())).status).toBe(200);
    expect((await get(a, '/hello/sayHi', uniqueUser())).status).toBe(200);
    expect((await get(a, '/hello/sayHi', uniqueUser())).status).toBe(429);
  });

  it('uses a custom error message', async () => {
    const a = await app({ errorMessage: 'Slow down' });
    const user = uniqueUser();
    await statuses(a, '/hello/sayHi', 2, user);
    const res = await get(a, '/hello/sayHi', user);
    expect(res.body).toEqual({ statusCode: 429, message: 'Slow down' });
  });
});

describe.each(HTTP_ADAPTERS)('client IP and proxies over %s', (adapter) => {
  const appWithTrustProxy = (trustProxy: boolean) =>
    createApp({ keyPrefix: uniquePrefix() }, { adapter, trustProxy });
  const from = (a: INestApplication, forwardedFor: string) =>
    request(a.getHttpServer()).get('/hello/sayHi').set('X-Forwarded-For', forwardedFor);

  it('ignores X-Forwarded-For unless trust proxy is set, so spoofed headers mint no fresh keys', async () => {
    const a = await appWithTrustProxy(false);
    const codes = [];
    for (const ip of ['1.1.1.1', '2.2.2.2', '3.3.3.3']) codes.push((await from(a, ip)).status);
    expect(codes).toEqual([200, 200, 429]);
    await a.close();
  });

  it('keys on the forwarded address with trust proxy, IPv4-mapped as IPv4 and IPv6 by /64', async () => {
    const a = await appWithTrustProxy(true);
    const codes = [];
    for (const ip of [
      '1.1.1.1',
      '::ffff:1.1.1.1',
      '2.2.2.2',
      '2001:db8:0:1::1',
      '2001:db8:0:1::2',
      '2001:db8:0:1:ffff::3',
      '2001:db8:0:2::1',
    ]) {
      codes.push((await from(a, ip)).status);
    }
    expect(codes).toEqual([200, 200, 200, 200, 200, 429, 200]);
    await a.close();
  });
});
