/** Budgets shared beyond one route (`scope`), over HTTP through a real Nest app, on both stores. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { RATE_ALGORITHMS } from '../../../lib/algorithms/registry.js';
import { RateLimitModule } from '../../../lib/index.js';
import { stateKeys } from '../../support/decision-ids.js';
import { type StoreKind, useRedis, REDIS_DECIDES_MS } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { STORES_AND_ADAPTERS, uniquePrefix, uniqueUser } from './fixtures/app.js';
import { type HttpAdapterKind, startHttpApp, USER_HEADER } from './fixtures/http-app.js';
import { limitOf, policiesOf, type Response, statusesOf } from './fixtures/policy-app.js';
import { Gate, PLAN_HEADER, SCOPE_CONTROLLERS } from './fixtures/scope-controllers.js';

/** Apps serving the scope controllers on one store and adapter, closed after each test. */
function useScopeApps(kind: StoreKind, adapter: HttpAdapterKind) {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  async function app(keyPrefix = uniquePrefix()): Promise<INestApplication> {
    const created = await startHttpApp(
      {
        imports: [
          RateLimitModule.forRoot({
            keyPrefix,
            ...(kind === 'redis' ? { redis: redis().url, timeout: REDIS_DECIDES_MS } : {}),
          }),
        ],
        controllers: SCOPE_CONTROLLERS,
        providers: [Gate],
      },
      { adapter },
    );
    apps.push(created);
    return created;
  }

  const get = (a: INestApplication, path: string, user: string, headers = {}) =>
    request(a.getHttpServer()).get(path).set(USER_HEADER, user).set(headers);

  /** One request after the other, each to the next path. */
  async function visit(
    a: INestApplication,
    paths: string[],
    user: string,
    headers: Record<string, string> = {},
  ): Promise<Response[]> {
    const out: Response[] = [];
    for (const path of paths) out.push(await get(a, path, user, headers));
    return out;
  }

  return { app, get, visit, redis };
}

const remaining = (responses: Response[], name: string) => responses.map((r) => limitOf(r, name).r);

describe.each(STORES_AND_ADAPTERS)('scope on the %s store over %s', (kind, adapter) => {
  const { app, get, visit, redis } = useScopeApps(kind, adapter);

  it("'controller' on a class-level policy: the methods share one budget, another controller has its own", async () => {
    const a = await app();
    const user = uniqueUser();
    const responses = await visit(a, ['/things/a', '/things/b', '/things/a', '/things/b'], user);
    expect(statusesOf(responses)).toEqual([200, 200, 200, 429]);
    expect(remaining(responses, 'plan')).toEqual([2, 1, 0, 0]);

    const [other] = await visit(a, ['/other-things'], user);
    expect(other.status).toBe(200);
    expect(limitOf(other, 'plan').r).toBe(2);
  });

  it("'app' across two controllers: one budget, shown the same in both routes' headers", async () => {
    const a = await app();
    const user = uniqueUser();
    const paths = ['/app-one', '/app-two', '/app-one', '/app-two', '/app-one'];
    const responses = await visit(a, paths, user);
    expect(statusesOf(responses)).toEqual([200, 200, 200, 200, 429]);
    expect(remaining(responses, 'api')).toEqual([3, 2, 1, 0, 0]);
    expect(policiesOf(responses[1])).toEqual([{ name: 'api', q: 4, w: 60 }]);
    // Counted per tracker, as ever: another user has the whole budget.
    const [fresh] = await visit(a, ['/app-two'], uniqueUser());
    expect(limitOf(fresh, 'api').r).toBe(3);
  });

  it('a custom name across two routes; the same policy in scope app is another budget', async () => {
    const a = await app();
    const user = uniqueUser();
    const responses = await visit(a, ['/exports/csv', '/exports/pdf', '/exports/csv'], user);
    expect(statusesOf(responses)).toEqual([200, 200, 429]);
    expect(remaining(responses, 'exports')).toEqual([1, 0, 0]);

    const [appWide] = await visit(a, ['/exports/app-wide'], user);
    expect(appWide.status).toBe(200);
    expect(limitOf(appWide, 'exports').r).toBe(1);
  });

  it('a per-route and an app-wide policy on one route: the first stays per route, all or nothing', async () => {
    const a = await app();
    const user = uniqueUser();
    const onX = await visit(a, ['/mixed-scope/x', '/mixed-scope/x', '/mixed-scope/x'], user);
    expect(statusesOf(onX)).toEqual([200, 200, 429]);
    expect(remaining(onX, 'route')).toEqual([1, 0, 0]);
    // The route's own policy turned the third away: nothing was taken from the shared one.
    expect(remaining(onX, 'api')).toEqual([3, 2, 2]);

    const onY = await visit(a, ['/mixed-scope/y', '/mixed-scope/y'], user);
    expect(statusesOf(onY)).toEqual([200, 200]);
    expect(remaining(onY, 'route')).toEqual([1, 0]);
    expect(remaining(onY, 'api')).toEqual([1, 0]);

    const [elsewhere] = await visit(a, ['/app-one'], user);
    expect(elsewhere.status).toBe(429);
    expect(limitOf(elsewhere, 'api').r).toBe(0);
  });

  it('the per-plan recipe with scope app: each plan one budget across the routes', async () => {
    const a = await app();
    const free = await visit(a, ['/plans/search', '/plans/export', '/plans/search'], uniqueUser());
    expect(statusesOf(free)).toEqual([200, 200, 429]);
    expect(remaining(free, 'plan')).toEqual([1, 0, 0]);

    const paths = ['/plans/search', '/plans/export', '/plans/search', '/plans/export'];
    const pro = await visit(a, [...paths, '/plans/search'], uniqueUser(), { [PLAN_HEADER]: 'pro' });
    expect(statusesOf(pro)).toEqual([200, 200, 200, 200, 429]);
    expect(policiesOf(pro[0])).toEqual([{ name: 'plan', q: 4, w: 60 }]);
  });

  it("count 'failures' in a shared scope: successes on one route are given back, failures on the other count", async () => {
    const a = await app();
    const user = uniqueUser();
    const ok = await visit(a, ['/login/ok', '/login/ok', '/login/ok'], user);
    expect(statusesOf(ok)).toEqual([200, 200, 200]);
    expect(remaining(ok, 'failures')).toEqual([1, 1, 1]);

    const failed = await visit(a, ['/login/fail', '/login/fail'], user);
    expect(statusesOf(failed)).toEqual([401, 401]);
    const [after] = await visit(a, ['/login/ok'], user);
    expect(after.status).toBe(429);
  });

  it("'concurrency' in a shared scope: a lease held on one route turns the other away until it is freed", async () => {
    const a = await app();
    const gate = a.get(Gate);
    const user = uniqueUser();
    const held = get(a, '/uploads/a', user).then((r) => r);
    await waitFor('the held upload', 5000, async () => gate.running === 1 || 'not yet');

    const [turnedAway] = await visit(a, ['/uploads/b'], user);
    expect(turnedAway.status).toBe(429);
    expect(limitOf(turnedAway, 'uploads').r).toBe(0);

    gate.open();
    expect((await held).status).toBe(200);
    const [after] = await visit(a, ['/uploads/b'], user);
    expect(after.status).toBe(200);
  });

  it.each(RATE_ALGORITHMS)('%s: two routes share one budget', async (algorithm) => {
    const a = await app();
    const [first, second] = [`/alg/${algorithm}/a`, `/alg/${algorithm}/b`];
    const responses = await visit(a, [first, second, first, second], uniqueUser());
    expect(statusesOf(responses)).toEqual([200, 200, 200, 429]);
    expect(remaining(responses, 'shared')).toEqual([2, 1, 0, 0]);
  });

  if (kind === 'redis') {
    it('keys: the tracker is the hash tag; the shared key names the scope, the per-route one the route', async () => {
      const keyPrefix = uniquePrefix();
      const a = await app(keyPrefix);
      const user = uniqueUser();
      await visit(a, ['/mixed-scope/x', '/app-two'], user);
      const keys = stateKeys(await redis().shared.keys(`${keyPrefix}:*`)).sort();
      expect(keys).toEqual([
        `${keyPrefix}:{user:${user}}@app:sw:api`,
        `${keyPrefix}:{user:${user}}@r|GET /mixed-scope/x:0:sw:route`,
      ]);
    });
  }
});

describe('scope across instances', () => {
  const { app, get } = useScopeApps('redis', 'express');

  it("two Nest apps on one Redis share an 'app' budget exactly, under concurrent requests", async () => {
    const keyPrefix = uniquePrefix();
    const instances = [await app(keyPrefix), await app(keyPrefix)];
    const user = uniqueUser();
    const fired = Array.from({ length: 40 }, (_, i) =>
      get(instances[i % 2], i % 4 < 2 ? '/burst/a' : '/burst/b', user),
    );
    const statuses = statusesOf(await Promise.all(fired));
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  });
});
