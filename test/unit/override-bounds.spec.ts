/**
 * The bounds of every override field, checked before anything is stored, on the in-process
 * source: each refusal names the field and the bound (the Redis source: test/fault/override-loss).
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { RateLimitConfigError } from '../../lib/policy/validation.js';
import { KnownPolicies } from '../../lib/overrides/known-policies.js';
import { MemoryOverrideSource } from '../../lib/overrides/memory-override-source.js';
import {
  clearOverride,
  listOverrides,
  setOverride,
} from '../../lib/overrides/override-commands.js';
import { type OverrideLimit, type OverrideOptions } from '../../lib/overrides/overridden-policy.js';
import { OverrideRegistry } from '../../lib/overrides/override-registry.js';
import { TestClock } from '../support/stores.js';

/** The documented bound on the overrides in force at once. */
const MAX_OVERRIDES = 10_000;
const API = resolvePolicy({ name: 'api', period: '1m', threshold: 3 }, 'test');
const BUCKET = resolvePolicy(
  { name: 'bucket', algorithm: 'token-bucket', period: '1s', threshold: 10 },
  'test',
);
const logs: string[] = [];
const registries: OverrideRegistry[] = [];

afterEach(async () => {
  logs.length = 0;
  await Promise.all(registries.splice(0).map((r) => r.close()));
});

/** A registry on a memory source, which `fill` may stock before the registry watches it. */
async function registry(
  fill: (source: MemoryOverrideSource) => Promise<void> = async () => undefined,
) {
  const clock = new TestClock();
  const known = new KnownPolicies();
  known.notePolicies([API, BUCKET]);
  const source = new MemoryOverrideSource(clock.now);
  await fill(source);
  const r = new OverrideRegistry(source, known, 60_000, {
    log: () => undefined,
    warn: (m: string) => logs.push(m),
  });
  registries.push(r);
  await r.start(1000);
  return { r, source, clock };
}

/** The message `run` is refused with, as a RateLimitConfigError. */
async function refusal(run: () => Promise<unknown>): Promise<string> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RateLimitConfigError);
  return (error as Error).message;
}

describe('the bounds of an override', () => {
  it('refuses a tracker over 1024 characters by its length, and takes one of 1024', async () => {
    const { r } = await registry();
    const huge = 'x'.repeat(1_000_000);
    expect(await refusal(() => setOverride(r, 'api', { threshold: 5 }, { tracker: huge }))).toBe(
      'RateLimitService.override: tracker must be at most 1024 characters, got 1000000',
    );
    expect(await refusal(() => clearOverride(r, 'api', { tracker: huge }))).toBe(
      'RateLimitService.clearOverride: tracker must be at most 1024 characters, got 1000000',
    );
    expect(await listOverrides(r)).toEqual([]);
    await setOverride(r, 'api', { threshold: 5 }, { tracker: 'y'.repeat(1024) });
    expect(r.size).toBe(1);
  });

  it('refuses a policy name no policy could have, by its length when long', async () => {
    const { r } = await registry();
    const long = 'a'.repeat(65);
    const expected = 'policyName must be a policy name: 1 to 64 letters, digits or _ . - *';
    expect(await refusal(() => setOverride(r, long, { threshold: 5 }, undefined))).toBe(
      `RateLimitService.override: ${expected}, got 65 characters`,
    );
    expect(await refusal(() => clearOverride(r, 'a'.repeat(100_000), undefined))).toBe(
      `RateLimitService.clearOverride: ${expected}, got 100000 characters`,
    );
    expect(await refusal(() => clearOverride(r, 'api key', undefined))).toBe(
      `RateLimitService.clearOverride: ${expected}, got "api key"`,
    );
    expect(await refusal(() => clearOverride(r, '', undefined))).toMatch(/policyName must be/);
  });

  it.each<[string, OverrideLimit, OverrideOptions | undefined, string]>([
    [
      'threshold 0',
      { threshold: 0 },
      undefined,
      'threshold must be an integer from 1 to 1000000000, got 0',
    ],
    [
      'threshold past 10^9',
      { threshold: 1e9 + 1 },
      undefined,
      'threshold must be an integer from 1 to 1000000000, got 1000000001',
    ],
    [
      'a fractional threshold',
      { threshold: 2.5 },
      undefined,
      'threshold must be an integer from 1 to 1000000000, got 2.5',
    ],
    [
      'burst past 10^9',
      { threshold: 5, burst: 2e9 },
      undefined,
      'burst must be an integer from 1 to 1000000000, got 2000000000',
    ],
    ['period 0', { threshold: 5, period: 0 }, undefined, 'period must be at least 1ms, got 0'],
    [
      'period past 10 years',
      { threshold: 5, period: '3651d' },
      undefined,
      'period must be at most 10 years, got "3651d"',
    ],
    [
      'ttl under 1 ms',
      { threshold: 5 },
      { ttl: '0.5ms' },
      'ttl must be a whole number of milliseconds, got "0.5ms"',
    ],
    [
      'ttl past 10 years',
      { threshold: 5 },
      { ttl: '3651d' },
      'ttl must be at most 10 years, got "3651d"',
    ],
  ])('refuses %s, naming the field and the bound', async (_, limit, options, expected) => {
    const { r } = await registry();
    const policy = limit.burst === undefined ? 'api' : 'bucket';
    expect(await refusal(() => setOverride(r, policy, limit, options))).toBe(
      `RateLimitService.override: ${expected}`,
    );
    expect(await listOverrides(r)).toEqual([]);
  });

  it(`refuses a new override past ${MAX_OVERRIDES} in force, and takes a replacement, or one once some end`, async () => {
    const { r, clock } = await registry(async (stocked) => {
      for (let i = 0; i < MAX_OVERRIDES - 1; i++) {
        await stocked.set({ policy: 'api', tracker: `t${i}`, limit: { threshold: 1 } });
      }
      await stocked.set({ policy: 'api', tracker: 'brief', limit: { threshold: 1 }, ttlMs: 1000 });
    });
    expect(await refusal(() => setOverride(r, 'api', { threshold: 2 }, { tracker: 'new' }))).toBe(
      `RateLimitService.override: at most ${MAX_OVERRIDES} overrides may be in force, and ${MAX_OVERRIDES} are: clear some (or replace one: the same policy and tracker) first`,
    );
    expect((await listOverrides(r)).some((e) => e.tracker === 'new')).toBe(false);
    // The same policy and tracker again replaces it: no more in force.
    await setOverride(r, 'api', { threshold: 3 }, { tracker: 't5' });
    // One that ended makes room.
    clock.advance(1000);
    await setOverride(r, 'api', { threshold: 2 }, { tracker: 'new' });
    expect(r.size).toBe(MAX_OVERRIDES);
  });
});
