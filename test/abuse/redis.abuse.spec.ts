/**
 * Hostile trackers against a real redis-server: through `RedisStore` with keys built as the guard
 * builds them and with the raw strings as keys, and through `RateLimitService` on a Nest app.
 * No call may throw, every decision must be sane, nothing but the rate-limit keys may change, and
 * the server must only ever see the one script, whatever the keys hold.
 */
import { createHash, randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { type Redis } from 'ioredis';
import { RATE_ALGORITHMS } from '../../lib/algorithms/registry.js';
import {
  type RateLimitDecision,
  RateLimitModule,
  RateLimitService,
  RedisStore,
} from '../../lib/index.js';
import { encodeKeyPart, RouteKeys } from '../../lib/keys/route-keys.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import {
  BATCH_SCRIPT,
  DECISION_LIBRARY,
  DECISION_SCRIPTS,
} from '../../lib/stores/redis/decisions/scripts.js';
import { useRedis } from '../support/stores.js';
import { nastySample } from './fixtures/nasty.js';
import { stateKeys } from '../support/decision-ids.js';
import { OVERRIDES_SCRIPT } from '../../lib/overrides/redis-override-source.js';

// An hour: the fixed window's keys live to the end of a clock-aligned window, and a minute's
// boundary falling during the run would expire the keys written before it.
const PERIOD_MS = 3_600_000;
// A threshold of 1, so the second call on a key shows its first call was really recorded there.
const POLICIES = RATE_ALGORITHMS.map((algorithm) =>
  resolvePolicy({ algorithm, period: PERIOD_MS / 1000, threshold: 1, name: algorithm }, 'abuse'),
);
// The same seed every run: a failure names a tracker that fails again on the next run.
const TRACKERS = [...new Set(nastySample(400, 20_260_501))];
// An empty key is refused by design (a RateLimitConfigError); every other string is a key.
const SERVICE_KEYS = TRACKERS.filter((t) => t !== '');
// The decision scripts by algorithm code, and the batch script as 'batch'.
const SCRIPT_SHAS = new Map(
  Object.entries({ ...DECISION_SCRIPTS, batch: BATCH_SCRIPT }).map(([code, { lua }]) => [
    code,
    createHash('sha1').update(lua).digest('hex'),
  ]),
);
const MARKER = 'abuse:marker';

/** What is wrong with a key's first decision (should allow) and second (should reject). */
function insanity(first: RateLimitDecision, second: RateLimitDecision): string[] {
  const problems: string[] = [];
  // Buckets answer a full reset within one period, the sliding counter within two.
  const inRange = (ms: number) => ms > 0 && ms <= 2 * PERIOD_MS;
  if (!first.allowed) problems.push('first call rejected');
  for (const p of first.policies) {
    if (!p.allowed || p.remaining !== 0 || p.retryAfterMs !== 0 || !inRange(p.resetAfterMs)) {
      problems.push(`first ${p.policy.id}: ${JSON.stringify({ ...p, policy: undefined })}`);
    }
  }
  if (second.allowed) problems.push('second call allowed');
  for (const p of second.policies) {
    if (p.allowed || !inRange(p.retryAfterMs)) {
      problems.push(`second ${p.policy.id}: ${JSON.stringify({ ...p, policy: undefined })}`);
    }
  }
  if (first.policies.length !== second.policies.length || first.policies.length === 0) {
    problems.push(`policies: ${first.policies.length}, then ${second.policies.length}`);
  }
  return problems;
}

/** A tracker as a failure message shows it: escaped, and cut short if it is one of the long ones. */
const label = (tracker: string) =>
  tracker.length > 80
    ? `${JSON.stringify(tracker.slice(0, 60))}... (${tracker.length} chars)`
    : JSON.stringify(tracker);

/** Two decisions on the same keys; a throw is reported with the tracker, not raised. */
async function twice(
  tracker: string,
  consume: () => Promise<RateLimitDecision>,
  problems: string[],
): Promise<void> {
  try {
    const first = await consume();
    const second = await consume();
    for (const p of insanity(first, second)) problems.push(`${label(tracker)}: ${p}`);
    // A decision the memory fallback made would say so; these must all be Redis's own.
    if ('degraded' in first || 'degraded' in second) {
      problems.push(`${label(tracker)}: decided without Redis`);
    }
  } catch (error) {
    problems.push(`${label(tracker)}: threw ${String(error)}`);
  }
}

describe('hostile trackers through Redis', () => {
  const redis = useRedis('redis');
  let admin: Redis;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    admin = redis().client();
    // A private server starts with no scripts; a shared one (REDIS_URL) is emptied of them, so
    // the count below is this file's doing.
    await admin.script('FLUSH');
    await admin.call('FUNCTION', 'FLUSH');
    await admin.set(MARKER, 'untouched');
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  /** Every key under `prefix` that holds rate-limit state, read back from the server. */
  async function keysUnder(prefix: string): Promise<string[]> {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return stateKeys(found);
  }

  /**
   * Nothing was flushed or deleted, the scripts of `used` (or the function library) are loaded,
   * and every script and function library the server holds is one of the package's own: no user
   * data ever became code.
   */
  async function expectUntouched(used: readonly string[] | 'functions'): Promise<void> {
    expect(await admin.get(MARKER)).toBe('untouched');
    expect(await admin.info('commandstats')).not.toMatch(/cmdstat_(flushall|flushdb|del|unlink):/);
    const codes = [...SCRIPT_SHAS.keys()];
    // The module's own scripts: the decisions', and the one that reads the limit overrides.
    const exists = (await admin.script(
      'EXISTS',
      ...SCRIPT_SHAS.values(),
      OVERRIDES_SCRIPT.sha,
    )) as number[];
    if (used !== 'functions') for (const code of used) expect(exists[codes.indexOf(code)]).toBe(1);
    const ours = exists.reduce((sum, e) => sum + e, 0);
    expect(await admin.info('memory')).toMatch(
      new RegExp(`^number_of_cached_scripts:${ours}\\r?$`, 'm'),
    );
    const libraries = JSON.stringify(await admin.call('FUNCTION', 'LIST'));
    const names = [...libraries.matchAll(/"library_name","([^"]*)"/g)].map((m) => m[1]);
    expect(names).toEqual(used === 'functions' ? [DECISION_LIBRARY.name] : []);
  }

  it(`RedisStore decides ${TRACKERS.length} hostile trackers with every algorithm, as route keys and as raw keys`, async () => {
    // As scripts here; the module below decides with Functions.
    const store = new RedisStore({ client: redis().shared, functions: false });
    const prefix = `abuse-${randomUUID().slice(0, 8)}`;
    const head = new RouteKeys(prefix).routeHead('GET /abuse/:id');
    const problems: string[] = [];

    for (const [n, tracker] of TRACKERS.entries()) {
      const runs: Array<Promise<void>> = [];
      for (const [i, policy] of POLICIES.entries()) {
        // As the guard keys it, and raw, numbered so that strings UTF-8 cannot tell apart (lone
        // surrogates) still get keys of their own: the store must take any string as a key.
        const built = head + encodeKeyPart(tracker) + RouteKeys.tail(policy, 0);
        const raw = `${prefix}:raw:${n}:${i}:${tracker}`;
        for (const key of [built, raw]) {
          runs.push(twice(tracker, () => store.consume([key], [policy], [1]), problems));
        }
      }
      await Promise.all(runs);
    }

    expect(problems.slice(0, 10)).toEqual([]);
    // One key per tracker, policy and spelling, each written by its first call: none lost,
    // none merged with another, none extra.
    expect(await keysUnder(prefix)).toHaveLength(TRACKERS.length * POLICIES.length * 2);
    // Each tracker's decisions go out together, as one batch.
    await expectUntouched(['batch']);
  });

  it(`RateLimitService.consume takes ${SERVICE_KEYS.length} hostile trackers as keys, all algorithms in one decision`, async () => {
    const prefix = `abuse-${randomUUID().slice(0, 8)}`;
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ redis: redis().url, keyPrefix: prefix })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    apps.push(app);
    await app.init();
    const service = app.get(RateLimitService);
    const policies = RATE_ALGORITHMS.map((algorithm) => ({
      algorithm,
      period: PERIOD_MS / 1000,
      threshold: 1,
      name: algorithm,
    }));
    const problems: string[] = [];

    // One at a time, so no decision comes near the store timeout and falls back to memory.
    for (const tracker of SERVICE_KEYS) {
      await twice(tracker, () => service.consume(tracker, policies), problems);
    }

    expect(problems.slice(0, 10)).toEqual([]);
    expect(await keysUnder(prefix)).toHaveLength(SERVICE_KEYS.length * policies.length);
    await expectUntouched('functions');
  });
});
