/**
 * A function of yours that never settles (`getTracker`, a policy's `tracker`, a dynamic
 * `threshold`, `period` or `cost`) must not leave the request without an answer: past
 * `functionTimeout` it is answered as `onStoreError` says, on either store, with one warning.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { type RateLimitDecision, UserFunctionTimeoutError } from '../../../lib/index.js';
import { type RateLimitRootOptions } from '../../../lib/options/rate-limit.options.js';
import { STORE_UNAVAILABLE_MESSAGE } from '../../../lib/rate-limit.exception.js';
import { type StoreErrorPolicy } from '../../../lib/store-contract/store.interface.js';
import { STORE_KINDS, useRedis } from '../../support/stores.js';
import { uniquePrefix, uniqueUser, USER_HEADER } from './fixtures/app.js';
import { createHangingApp, LogCapture } from './fixtures/hanging-functions.js';
import { limitsOf, policiesOf, type Response, statusesOf } from './fixtures/policy-app.js';

const FUNCTION_TIMEOUT_MS = 100;
// A request that hangs fails here rather than holding the suite up until Jest gives up on it.
const GIVE_UP_MS = 3000;

/** Route, the function that hangs on it, and how memory decides it: the statuses of 4 requests. */
const ROUTES = [
  { path: '/hang/threshold', fn: 'threshold', handler: 'threshold', memory: [200, 200, 200, 429] },
  { path: '/hang/period', fn: 'period', handler: 'period', memory: [200, 200, 429, 429] },
  { path: '/hang/cost', fn: 'cost', handler: 'cost', memory: [200, 200, 429, 429] },
  { path: '/hang/tracker', fn: 'tracker', handler: 'tracker', memory: [200, 200, 429, 429] },
  {
    path: '/hang/get-tracker',
    fn: 'getTracker',
    handler: 'getTracker',
    memory: [200, 200, 429, 429],
  },
] as const;

describe.each(STORE_KINDS)('a function that never settles, on the %s store', (kind) => {
  const redis = useRedis(kind);
  const apps: INestApplication[] = [];
  let prefix = '';

  async function app(options: RateLimitRootOptions, logs = new LogCapture()) {
    prefix = uniquePrefix();
    const created = await createHangingApp(
      {
        keyPrefix: prefix,
        functionTimeout: FUNCTION_TIMEOUT_MS,
        ...(kind === 'redis' ? { redis: redis().url } : {}),
        ...options,
      },
      logs,
    );
    apps.push(created);
    return { app: created, logs };
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /** `n` requests one after another, each timed; none may hang. */
  async function series(a: INestApplication, path: string, n: number, user = uniqueUser()) {
    const responses: Response[] = [];
    const tookMs: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      responses.push(
        await request(a.getHttpServer()).get(path).set(USER_HEADER, user).timeout(GIVE_UP_MS),
      );
      tookMs.push(performance.now() - started);
    }
    return { responses, tookMs };
  }

  /** Answered once the bound passed, and well before anything hangs. */
  function expectAnsweredAtTheBound(tookMs: number[]) {
    for (const ms of tookMs) {
      expect(ms).toBeGreaterThanOrEqual(FUNCTION_TIMEOUT_MS - 5);
      expect(ms).toBeLessThan(GIVE_UP_MS / 2);
    }
  }

  function warningsAbout(logs: LogCapture, fn: string, handler: string) {
    const line = `${fn} did not settle within ${FUNCTION_TIMEOUT_MS}ms for @RateLimit on HangingController.${handler};`;
    return logs.entries.filter((e) => e.level === 'warn' && e.message.startsWith(line));
  }

  describe.each(ROUTES)('$fn on $path', ({ path, fn, handler, memory }) => {
    it("'memory': decides per instance in memory, with the default in the missing value's place", async () => {
      const { app: a, logs } = await app({ onStoreError: 'memory' });
      const { responses, tookMs } = await series(a, path, 4);

      expect(statusesOf(responses)).toEqual(memory);
      expectAnsweredAtTheBound(tookMs);
      const limit = memory.filter((s) => s === 200).length;
      expect(responses.map((r) => limitsOf(r)[0].r)).toEqual(
        memory.map((_, i) => Math.max(0, limit - 1 - i)),
      );
      const warnings = warningsAbout(logs, fn, handler);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].message).toContain('deciding it per instance in memory');
      expect(warnings[0].context).toBe('RateLimit');
      if (kind === 'redis') {
        // Decided in memory, as during an outage: nothing reached Redis.
        expect(await redis().client().keys(`${prefix}:*`)).toEqual([]);
      }
    });

    it("'allow': lets every request through, without rate-limit headers", async () => {
      const { app: a, logs } = await app({ onStoreError: 'allow' });
      const { responses, tookMs } = await series(a, path, 4);

      expect(statusesOf(responses)).toEqual([200, 200, 200, 200]);
      expectAnsweredAtTheBound(tookMs);
      for (const res of responses) expect(res.headers.ratelimit).toBeUndefined();
      const warnings = warningsAbout(logs, fn, handler);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].message).toContain('allowing it, as onStoreError says');
    });

    it("'deny': answers 503 with Retry-After", async () => {
      const { app: a, logs } = await app({ onStoreError: 'deny' });
      const { responses, tookMs } = await series(a, path, 3);

      expect(statusesOf(responses)).toEqual([503, 503, 503]);
      expectAnsweredAtTheBound(tookMs);
      for (const res of responses) {
        expect(res.body).toEqual({
          statusCode: 503,
          error: 'Service Unavailable',
          message: STORE_UNAVAILABLE_MESSAGE,
        });
        expect(res.headers['retry-after']).toBe('1');
      }
      const warnings = warningsAbout(logs, fn, handler);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].message).toContain('denying it with 503, as onStoreError says');
    });
  });

  it('a dynamic threshold that never settles is decided with the default threshold, 3, under its own name', async () => {
    const { app: a } = await app({});
    const { responses } = await series(a, '/hang/threshold', 1);
    expect(policiesOf(responses[0])).toEqual([{ name: 'per-plan', q: 3, w: 60 }]);
  });

  it('a getTracker that never settles counts each client by the default tracker, not all in one bucket', async () => {
    const { app: a } = await app({});
    const first = await series(a, '/hang/get-tracker', 3);
    const other = await series(a, '/hang/get-tracker', 1);

    expect(statusesOf(first.responses)).toEqual([200, 200, 429]);
    expect(statusesOf(other.responses)).toEqual([200]);
  });

  it('a function onStoreError is told a UserFunctionTimeoutError naming the function and the route, and its answer holds', async () => {
    const told: Error[] = [];
    const decisions: RateLimitDecision[] = [];
    const { app: a } = await app({
      onStoreError: (error): StoreErrorPolicy => {
        told.push(error);
        return 'deny';
      },
      onDecision: (_ctx, decision) => decisions.push(decision),
    });
    const { responses } = await series(a, '/hang/cost', 2);

    expect(statusesOf(responses)).toEqual([503, 503]);
    expect(told).toHaveLength(2);
    expect(told[0]).toBeInstanceOf(UserFunctionTimeoutError);
    expect(told[0]).toMatchObject({
      name: 'UserFunctionTimeoutError',
      fn: 'cost',
      where: '@RateLimit on HangingController.cost',
      timeoutMs: FUNCTION_TIMEOUT_MS,
    });
    expect(decisions.map((d) => d.degraded)).toEqual(['deny', 'deny']);
  });

  it('the warning is not repeated per request in a flood: 20 concurrent requests, one line', async () => {
    const { app: a, logs } = await app({ onStoreError: 'allow' });
    const server = a.getHttpServer();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        request(server).get('/hang/period').set(USER_HEADER, uniqueUser()).timeout(GIVE_UP_MS),
      ),
    );

    expect(new Set(statusesOf(responses))).toEqual(new Set([200]));
    expect(warningsAbout(logs, 'period', 'period')).toHaveLength(1);
  });
});
