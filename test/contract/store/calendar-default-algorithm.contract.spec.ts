/**
 * A quota by the calendar that names no algorithm counts in fixed calendar windows: it resolves to
 * the policy that names `fixed-window`, answers as it does on the memory store and on Redis
 * through every client library, and keeps its counts under the fixed window's keys. Through the
 * store, and through RateLimitService.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type RateLimitDecision, RateLimitModule, RateLimitService } from '../../../lib/index.js';
import { resolvePolicy } from '../../../lib/policy/rate-limit.policy.js';
import {
  STORE_TARGETS,
  TestClock,
  useClockedStores,
  useRedis,
  REDIS_DECIDES_MS,
} from '../../support/stores.js';
import { uniquePrefix } from '../http/fixtures/app.js';

const H = 3_600_000;
const at = Date.parse;
// 15:30 UTC: 8 h 30 min to the day's end.
const AFTERNOON = '2026-06-10T15:30:00Z';
const MIDNIGHT = '2026-06-11T00:00:00Z';
const TO_MIDNIGHT = 8.5 * H;

const view = ({ allowed, remaining, retryAfterMs, resetAfterMs }: RateLimitDecision) => ({
  allowed,
  remaining,
  retryAfterMs,
  resetAfterMs,
});

/** What a policy's keys, headers, block cache, telemetry and overrides read of it. */
const identity = (p: ReturnType<typeof resolvePolicy>) => ({
  algorithm: p.algorithm,
  code: p.code,
  id: p.id,
  name: p.name,
  periodMs: p.periodMs,
  threshold: p.threshold,
  burst: p.burst,
  unit: p.calendar?.unit,
});

describe('a calendar quota that names no algorithm resolves', () => {
  it("to the policy that names 'fixed-window'", () => {
    const bare = resolvePolicy({ calendar: 'day', threshold: 3 }, 'w');
    const named = resolvePolicy({ algorithm: 'fixed-window', calendar: 'day', threshold: 3 }, 'w');
    expect(identity(bare)).toEqual(identity(named));
    expect(identity(bare)).toMatchObject({ algorithm: 'fixed-window', id: 'fw:3-per-day' });
  });
});

describe.each(STORE_TARGETS)('a calendar quota without an algorithm on %s', (target) => {
  const stores = useClockedStores(target);

  it('counts 3 a day, then waits for the next midnight, as the fixed window does', async () => {
    const { clock, store } = await stores();
    clock.ms = at(AFTERNOON);
    const id = randomUUID();
    const bare = resolvePolicy({ calendar: 'day', threshold: 3 }, 'w');
    const named = resolvePolicy({ algorithm: 'fixed-window', calendar: 'day', threshold: 3 }, 'w');
    const answers = { bare: [] as unknown[], named: [] as unknown[] };
    for (let i = 0; i < 4; i++) {
      answers.bare.push(view(await store.consume([`{${id}}:bare`], [bare], [1])));
      answers.named.push(view(await store.consume([`{${id}}:named`], [named], [1])));
    }
    expect(answers.bare).toEqual(answers.named);
    expect(answers.bare.map((d) => (d as RateLimitDecision).allowed)).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(answers.bare[3]).toEqual({
      allowed: false,
      remaining: 0,
      retryAfterMs: TO_MIDNIGHT,
      resetAfterMs: TO_MIDNIGHT,
    });
    clock.ms = at(MIDNIGHT);
    expect(view(await store.consume([`{${id}}:bare`], [bare], [1]))).toMatchObject({
      allowed: true,
      remaining: 2,
    });
  });
});

describe.each(STORE_TARGETS)('through RateLimitService on %s', (target) => {
  const redis = useRedis(target === 'memory' ? 'memory' : 'redis');
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it("is a fixed-window policy, under the fixed window's keys", async () => {
    const clock = new TestClock(at(AFTERNOON));
    const keyPrefix = uniquePrefix();
    const client = target === 'memory' ? undefined : await redis().connect(target);
    const ref = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          keyPrefix,
          clock: clock.now,
          ...(client === undefined ? {} : { redis: client, timeout: REDIS_DECIDES_MS }),
        }),
      ],
    }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    apps.push(app);
    const limiter = app.get(RateLimitService);
    const key = `exports:${randomUUID()}`;
    const decisions: RateLimitDecision[] = [];
    for (let i = 0; i < 4; i++) {
      decisions.push(await limiter.consume(key, { calendar: 'day', threshold: 3 }));
    }
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions[3]).toMatchObject({ retryAfterMs: TO_MIDNIGHT, resetAfterMs: TO_MIDNIGHT });
    expect(decisions[3].policies[0].policy).toMatchObject({
      algorithm: 'fixed-window',
      id: 'fw:3-per-day',
    });
    if (target !== 'memory') {
      const keys = await redis().shared.keys(`${keyPrefix}:*`);
      // Beside it, the ids of the calls, which the store keeps to tell a retried call from a new one.
      const counts = keys.filter((k) => k.endsWith(':3-per-day'));
      expect(counts).toEqual([expect.stringMatching(/:0:fw:3-per-day$/)]);
    }
  });
});
