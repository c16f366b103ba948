/**
 * Limits changed at runtime through `RateLimitService.override`, over HTTP through a real Nest
 * app: what the headers show, usage carried over when a limit is lowered or raised, one
 * tracker's override beside everyone's, expiry, clearing, and the refusals.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RateLimitConfigError, RateLimitModule, RateLimitService } from '../../../lib/index.js';
import { type RateLimitRootOptions } from '../../../lib/options/rate-limit.options.js';
import { STORE_KINDS, type StoreKind, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { uniquePrefix, uniqueUser } from './fixtures/app.js';
import { startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { ClassLimitController, OverrideController } from './fixtures/override-controllers.js';
import { limitOf, policiesOf, type Response, statusesOf } from './fixtures/policy-app.js';

describe.each(STORE_KINDS)('limit overrides over HTTP on the %s store', (kind: StoreKind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];

  async function start(options: RateLimitRootOptions = {}) {
    const app = await startHttpApp({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix: uniquePrefix(),
          ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
          ...options,
        }),
      ],
      controllers: [OverrideController, ClassLimitController],
    });
    apps.push(app);
    const service = app.get(RateLimitService);
    const get = (path: string, user: string, headers: Record<string, string> = {}) =>
      request(app.getHttpServer()).get(path).set(USER_HEADER, user).set(headers);
    const series = async (path: string, n: number, user: string, headers = {}) => {
      const out: Response[] = [];
      for (let i = 0; i < n; i++) out.push(await get(path, user, headers));
      return out;
    };
    return { app, service, get, series };
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('shows the limit in force in RateLimit-Policy and RateLimit, on every route of that name', async () => {
    const { service, get } = await start();
    const user = uniqueUser();
    expect(policiesOf(await get('/ov/api', user))).toEqual([{ name: 'api', q: 3, w: 60 }]);

    await service.override('api', { threshold: 7, period: '30s' });
    const api = await get('/ov/api', user);
    expect(policiesOf(api)).toEqual([{ name: 'api', q: 7, w: 30 }]);
    // The usage carried over: one before, one now.
    expect(limitOf(api, 'api').r).toBe(5);
    expect(policiesOf(await get('/ov/api-hourly', user))).toEqual([{ name: 'api', q: 7, w: 30 }]);
    // Another name is left alone.
    expect(policiesOf(await get('/ov/untouched', user))).toEqual([
      { name: 'untouched', q: 2, w: 60 },
    ]);
  });

  it('a lowered limit rejects a caller until its usage falls under it; a raised one lets it through at once', async () => {
    const { service, get, series } = await start();
    const user = uniqueUser();
    expect(statusesOf(await series('/ov/api', 2, user))).toEqual([200, 200]);

    await service.override('api', { threshold: 1 });
    const lowered = await get('/ov/api', user);
    expect(lowered.status).toBe(429);
    expect(limitOf(lowered, 'api').r).toBe(0);

    await service.override('api', { threshold: 5 });
    expect(statusesOf(await series('/ov/api', 4, user))).toEqual([200, 200, 200, 429]);

    // Cleared: the policy's own 3, with 5 used.
    expect(await service.clearOverride('api')).toBe(true);
    const own = await get('/ov/api', user);
    expect(own.status).toBe(429);
    expect(policiesOf(own)).toEqual([{ name: 'api', q: 3, w: 60 }]);
    expect(await service.clearOverride('api')).toBe(false);
  });

  it("one tracker's override raises that caller and leaves the others, and wins over everyone's", async () => {
    const { service, series } = await start();
    const [vip, other] = [uniqueUser(), uniqueUser()];
    // The default tracker of a user is `user:<id>`.
    await service.override('api', { threshold: 5 }, { tracker: `user:${vip}` });
    expect(statusesOf(await series('/ov/api', 6, vip))).toEqual([200, 200, 200, 200, 200, 429]);
    expect(statusesOf(await series('/ov/api', 4, other))).toEqual([200, 200, 200, 429]);

    // Everyone's override does not replace the tracker's own.
    await service.override('api', { threshold: 1 });
    const later = uniqueUser();
    expect(statusesOf(await series('/ov/api', 2, later))).toEqual([200, 429]);
    const vipNow = await series('/ov/api', 1, vip);
    expect(policiesOf(vipNow[0])).toEqual([{ name: 'api', q: 5, w: 60 }]);
  });

  it("a policy's own tracker is matched by its value", async () => {
    const { service, series } = await start();
    const user = uniqueUser();
    await service.override('per-customer', { threshold: 4 }, { tracker: 'acme' });
    const acme = await series('/ov/customer', 5, user, { 'x-customer': 'acme' });
    expect(statusesOf(acme)).toEqual([200, 200, 200, 200, 429]);
    const globex = await series('/ov/customer', 3, user, { 'x-customer': 'globex' });
    expect(statusesOf(globex)).toEqual([200, 200, 429]);
  });

  it("matches each policy's tracker on a route where they differ, and on a budget shared across the app", async () => {
    const { service, series, get } = await start();
    const user = uniqueUser();
    await service.override('mixed-user', { threshold: 4 }, { tracker: `user:${user}` });
    await service.override('mixed-customer', { threshold: 3 }, { tracker: 'acme' });
    const acme = await series('/ov/mixed', 4, user, { 'x-customer': 'acme' });
    expect(statusesOf(acme)).toEqual([200, 200, 200, 429]);
    expect(policiesOf(acme[0])).toEqual([
      { name: 'mixed-user', q: 4, w: 60 },
      { name: 'mixed-customer', q: 3, w: 60 },
    ]);
    const other = await get('/ov/mixed', uniqueUser(), { 'x-customer': 'acme' });
    expect(policiesOf(other).map((p) => p.q)).toEqual([2, 3]);

    await service.override('shared', { threshold: 3 }, { tracker: `user:${user}` });
    expect(statusesOf(await series('/ov/shared', 4, user))).toEqual([200, 200, 200, 429]);
    expect(statusesOf(await series('/ov/shared', 3, uniqueUser()))).toEqual([200, 200, 429]);

    await service.override('class-wide', { threshold: 1 });
    expect(statusesOf(await series('/ov-class', 2, user))).toEqual([200, 429]);
  });

  it('applies to a policy whose threshold is known per request, when its name is static', async () => {
    const { service, series } = await start();
    const user = uniqueUser();
    await service.override('dynamic', { threshold: 3 });
    expect(statusesOf(await series('/ov/dynamic', 4, user))).toEqual([200, 200, 200, 429]);
  });

  it('ends by itself after its ttl, and lists the time left meanwhile', async () => {
    const { service, get } = await start();
    const user = uniqueUser();
    await service.override('api', { threshold: 9 }, { ttl: '400ms' });
    const listed = await service.overrides();
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ policy: 'api', threshold: 9 });
    expect(listed[0].expiresInMs).toBeGreaterThan(0);
    expect(listed[0].expiresInMs).toBeLessThanOrEqual(400);
    expect(listed[0].expiresAt).toBeInstanceOf(Date);
    expect(policiesOf(await get('/ov/api', user))[0]).toMatchObject({ q: 9 });

    await waitFor('the override to end', 2000, async () => {
      const q = policiesOf(await get('/ov/api', user))[0].q;
      return q === 3 || `q=${String(q)}`;
    });
    expect(await service.overrides()).toEqual([]);
  });

  it('lists every override in force, for every tracker and for one', async () => {
    const { service } = await start();
    await service.override('api', { threshold: 9, period: '10s' });
    await service.override('per-customer', { threshold: 4 }, { tracker: 'acme' });
    const listed = await service.overrides();
    expect(listed.sort((a, b) => a.policy.localeCompare(b.policy))).toEqual([
      { policy: 'api', threshold: 9, periodMs: 10_000 },
      { policy: 'per-customer', tracker: 'acme', threshold: 4 },
    ]);
  });

  it('refuses an unknown name, listing the known ones, and bad values, naming the field', async () => {
    const { service } = await start();
    const refusal = async (run: () => Promise<unknown>) => {
      const error = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RateLimitConfigError);
      return (error as Error).message;
    };
    const typo = await refusal(() => service.override('apu', { threshold: 5 }));
    expect(typo).toMatch(/^RateLimitService\.override: policyName must be/);
    expect(typo).toMatch(/did you mean "api"\?/);
    expect(typo).toMatch(
      /known: api, class-wide, dynamic, mixed-customer, mixed-user, per-customer, shared, untouched\)/,
    );
    expect(typo).toMatch(/got "apu"$/);

    expect(await refusal(() => service.override('api', { threshold: 0 }))).toMatch(
      /threshold must be an integer from 1 to 1000000000, got 0/,
    );
    expect(await refusal(() => service.override('api', { threshold: 2.5 }))).toMatch(/threshold/);
    expect(await refusal(() => service.override('api', { threshold: 2, period: 'soon' }))).toMatch(
      /period must be a number of seconds or a string like/,
    );
    expect(await refusal(() => service.override('api', { threshold: 2 }, { ttl: -1 }))).toMatch(
      /ttl must be at least 1ms, got -1/,
    );
    expect(await refusal(() => service.override('api', { threshold: 2 }, { tracker: '' }))).toMatch(
      /tracker must be a non-empty string/,
    );
    expect(await refusal(() => service.override('api', { threshold: 2, burst: 4 }))).toMatch(
      /burst must be omitted for sliding-window \(only token-bucket and leaky-bucket take it\)/,
    );
    expect(await refusal(() => service.override('api', { treshold: 2 } as never))).toMatch(
      /unknown field "treshold" \(did you mean "threshold"\?\)/,
    );
    expect(
      await refusal(() =>
        service.override('api', { threshold: 2 }, { ttl: '1h', for: 'x' } as never),
      ),
    ).toMatch(/RateLimitService\.override: unknown field "for"/);
    // Nothing was stored by any of them.
    expect(await service.overrides()).toEqual([]);
  });

  it('knows the names RateLimitService has resolved, and matches its key as the tracker', async () => {
    const { service } = await start();
    const JOBS = { name: 'jobs', period: '1m', threshold: 2 };
    await expect(service.override('jobs', { threshold: 3 })).rejects.toThrow(/policyName/);
    const [a, b] = [`tenant-${uniqueUser()}`, `tenant-${uniqueUser()}`];
    expect((await service.consume(a, JOBS)).remaining).toBe(1);

    await service.override('jobs', { threshold: 4 }, { tracker: a });
    const allowed = async (key: string, n: number) => {
      const out: boolean[] = [];
      for (let i = 0; i < n; i++) out.push((await service.consume(key, JOBS)).allowed);
      return out;
    };
    expect(await allowed(a, 4)).toEqual([true, true, true, false]);
    expect(await allowed(b, 3)).toEqual([true, true, false]);
    expect((await service.peek(a, JOBS)).policies[0].policy.threshold).toBe(4);
  });
});

describe('the override refresh option', () => {
  it('is refused below 100 ms, above an hour, or when it is not a duration, naming the field', async () => {
    for (const overrideRefresh of ['10ms', '2h', 'often']) {
      await expect(
        startHttpApp({
          imports: [RateLimitModule.forRoot({ overrideRefresh })],
          controllers: [OverrideController],
        }),
      ).rejects.toThrow(/RateLimitModule options: overrideRefresh must be/);
    }
  });
});
