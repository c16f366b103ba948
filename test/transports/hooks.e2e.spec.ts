/** The skipIf, onDecision and onLimited options, through real apps on Express and Fastify. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { type ExecutionContext, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { type RateLimitDecision } from '../../lib/index.js';
import { type RateLimitRootOptions } from '../../lib/options/rate-limit.options.js';
import {
  createApp,
  HTTP_ADAPTERS,
  uniquePrefix,
  uniqueUser,
  USER_HEADER,
} from '../contract/http/fixtures/app.js';
import { brokenStore } from './fixtures/broken-store.js';
import { LogCapture } from './fixtures/log-capture.js';

const INTERNAL_HEADER = 'x-internal';
const isInternal = (context: ExecutionContext) =>
  context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers[
    INTERNAL_HEADER
  ] === 'yes';

describe.each(HTTP_ADAPTERS)('decision hooks over %s', (adapter) => {
  const apps: INestApplication[] = [];

  async function app(options: RateLimitRootOptions, logger: LogCapture | false = false) {
    const created = await createApp({ keyPrefix: uniquePrefix(), ...options }, { adapter, logger });
    apps.push(created);
    return created;
  }

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  const get = (a: INestApplication, path: string, user: string, internal = false) => {
    const req = request(a.getHttpServer()).get(path).set(USER_HEADER, user);
    return internal ? req.set(INTERNAL_HEADER, 'yes') : req;
  };

  async function statuses(a: INestApplication, path: string, n: number, user: string) {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await get(a, path, user)).status);
    return out;
  }

  it('onDecision sees every decision on a limited route, allowed or not, and none elsewhere', async () => {
    const seen: Array<[string, boolean, number]> = [];
    const a = await app({
      onDecision: (context, d) => seen.push([context.getType(), d.allowed, d.remaining]),
    });
    const user = uniqueUser();
    expect(await statuses(a, '/hello/sayHi', 3, user)).toEqual([200, 200, 429]);
    expect(await statuses(a, '/open', 2, user)).toEqual([200, 200]);
    expect(seen).toEqual([
      ['http', true, 1],
      ['http', true, 0],
      ['http', false, 0],
    ]);
  });

  it('onLimited runs once per rejection with its decision, before the 429 is sent', async () => {
    const limited: RateLimitDecision[] = [];
    const a = await app({
      onLimited: (context, decision) => {
        limited.push(decision);
        // Visible on the 429 only if the hook ran before the response went out.
        context
          .switchToHttp()
          .getResponse<{ header(name: string, value: string): unknown }>()
          .header('x-seen-by-hook', 'yes');
      },
    });
    const user = uniqueUser();
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await get(a, '/hello/sayHi', user));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 429, 429]);
    expect(responses.map((r) => r.headers['x-seen-by-hook'])).toEqual([
      undefined,
      undefined,
      'yes',
      'yes',
    ]);
    expect(limited).toHaveLength(2);
    expect(limited[0]).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
    expect(limited[0].retryAfterMs).toBeGreaterThan(28_000);
  });

  it.each([
    ['a boolean', (context: ExecutionContext) => isInternal(context)],
    ['a promise', async (context: ExecutionContext) => isInternal(context)],
  ])(
    'skipIf returning %s leaves those requests uncounted: no decision, no headers',
    async (_, skipIf) => {
      let decisions = 0;
      const a = await app({ skipIf, onDecision: () => decisions++ });
      const user = uniqueUser();
      for (let i = 0; i < 5; i++) {
        const res = await get(a, '/hello/sayHi', user, true);
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit']).toBeUndefined();
      }
      expect(decisions).toBe(0);
      // The same user's ordinary requests still have the whole quota.
      expect(await statuses(a, '/hello/sayHi', 3, user)).toEqual([200, 200, 429]);
      expect(decisions).toBe(3);
    },
  );

  it('skipIf counts a request unless it returns exactly true', async () => {
    const a = await app({ skipIf: (() => 'yes') as never });
    expect(await statuses(a, '/hello/sayHi', 3, uniqueUser())).toEqual([200, 200, 429]);
  });

  it('a hook that throws or rejects never breaks the request; each distinct failure is logged once', async () => {
    const logs = new LogCapture();
    const a = await app(
      {
        skipIf: () => {
          throw new Error('the allow-list is down');
        },
        onDecision: () => {
          throw new Error('metrics are down');
        },
        onLimited: () => Promise.reject(new Error('alerting is down')) as never,
      },
      logs,
    );
    const user = uniqueUser();
    // A failing skipIf skips nothing: every request is counted.
    expect(await statuses(a, '/hello/sayHi', 5, user)).toEqual([200, 200, 429, 429, 429]);
    const failures = logs.errors
      .filter((e) => e.context === 'RateLimit')
      .map((e) => e.message)
      .sort();
    expect(failures).toEqual([
      'The onDecision hook failed: metrics are down; the request went on without it',
      'The onLimited hook failed: alerting is down; the request went on without it',
      'The skipIf hook failed: the allow-list is down; the request went on without it',
    ]);
  });

  it("onDecision sees degraded decisions too: 'allow' passes unlimited, 'deny' also calls onLimited", async () => {
    const seen: Array<[string | undefined, boolean]> = [];
    const limited: Array<string | undefined> = [];
    const hooks = {
      store: brokenStore(),
      onDecision: (_: ExecutionContext, d: RateLimitDecision) => seen.push([d.degraded, d.allowed]),
      onLimited: (_: ExecutionContext, d: RateLimitDecision) => limited.push(d.degraded),
    };
    const allowing = await app({ ...hooks, onStoreError: 'allow' });
    expect(await statuses(allowing, '/hello/sayHi', 3, uniqueUser())).toEqual([200, 200, 200]);
    const denying = await app({ ...hooks, onStoreError: 'deny' });
    expect(await statuses(denying, '/hello/sayHi', 1, uniqueUser())).toEqual([503]);
    expect(seen).toEqual([
      ['allow', true],
      ['allow', true],
      ['allow', true],
      ['deny', false],
    ]);
    expect(limited).toEqual(['deny']);
  });
});
