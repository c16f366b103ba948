/**
 * Overrides on a real Redis, through every client: bounded input refused before anything is
 * written, entries written by hand that are not valid skipped with one warning, and overrides in
 * force that vanish without a clear (FLUSHALL, a restart without persistence) told of with one
 * warning per instance that had them, while a clear (its notice heard or missed) and an ended
 * ttl are not.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { KnownPolicies } from '../../lib/overrides/known-policies.js';
import { clearOverride, setOverride } from '../../lib/overrides/override-commands.js';
import { OverrideRegistry } from '../../lib/overrides/override-registry.js';
import { type OverrideSource } from '../../lib/overrides/override-source.js';
import { RedisOverrideSource } from '../../lib/overrides/redis-override-source.js';
import { encodeKeyPart } from '../../lib/keys/route-keys.js';
import { CLIENT_KINDS, type ClientKind } from '../support/clients.js';
import { useRedis } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';

const REFRESH_MS = 300;
/** The documented bound on the overrides in force at once. */
const MAX_OVERRIDES = 10_000;
const API = resolvePolicy({ name: 'api', period: '1m', threshold: 3 }, 'test');
const OTHER = resolvePolicy({ name: 'other', period: '1m', threshold: 3 }, 'test');
const VANISHED = /limit override\(s\) in force vanished from Redis without being cleared/;

/** One instance: its registry on a Redis source, what it warned, and how often it has listed. */
interface Instance {
  readonly registry: OverrideRegistry;
  readonly warnings: string[];
  /** How many listings it has made so far. */
  lists(): number;
}

describe.each<ClientKind>(CLIENT_KINDS)('overrides on Redis through %s', (kind) => {
  const redis = useRedis('redis');
  const opened: OverrideRegistry[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.close()));
  });

  /**
   * An instance on `prefix`, as the module builds one. A `deaf` one hears of no change notice: it
   * follows on its periodic reading alone, as an instance whose subscriber connection was down.
   */
  async function instance(prefix: string, deaf = false): Promise<Instance> {
    const store = new RedisStore({ client: await redis().connect(kind) });
    const redisSource = RedisOverrideSource.forStore(store, prefix);
    let lists = 0;
    const source: OverrideSource = {
      set: (write) => redisSource.set(write),
      clear: (policy, tracker) => redisSource.clear(policy, tracker),
      list: () => redisSource.list().finally(() => void lists++),
      watch: (changed) => (deaf ? undefined : redisSource.watch(changed)),
      close: () => redisSource.close(),
    };
    const known = new KnownPolicies();
    known.notePolicies([API, OTHER]);
    const warnings: string[] = [];
    const logger = { log: () => undefined, warn: (m: string) => void warnings.push(m) };
    const registry = new OverrideRegistry(source, known, REFRESH_MS, logger);
    opened.push(registry);
    await registry.start(5000);
    return { registry, warnings, lists: () => lists };
  }

  /** Waits until `instance` has `size` overrides in force. */
  const holds = (instance: Instance, size: number, ms = 5000) =>
    waitFor(`${size} in force`, ms, async () => {
      const now = instance.registry.size;
      return now === size || `${now} in force`;
    });

  /** Waits until each of `instances` has listed `n` more times: what it would warn of, it has. */
  async function afterListings(instances: readonly Instance[], n = 3): Promise<void> {
    for (const one of instances) {
      const until = one.lists() + n;
      await waitFor(`${n} listings more`, 10_000, async () => one.lists() >= until || 'not yet');
    }
  }

  const prefix = () => `ov-${randomUUID().slice(0, 8)}`;
  const thresholdOf = (instance: Instance) =>
    instance.registry.apply([API], undefined, false)[0].threshold;

  it('refuses a tracker of a million characters, and each field out of bounds, writing nothing', async () => {
    const p = prefix();
    const a = await instance(p);
    const huge = 'x'.repeat(1_000_000);
    await expect(
      setOverride(a.registry, 'api', { threshold: 5 }, { tracker: huge }),
    ).rejects.toThrow(
      'RateLimitService.override: tracker must be at most 1024 characters, got 1000000',
    );
    await expect(setOverride(a.registry, 'api', { threshold: 1e9 + 1 }, undefined)).rejects.toThrow(
      'RateLimitService.override: threshold must be an integer from 1 to 1000000000',
    );
    await expect(
      setOverride(a.registry, 'api', { threshold: 5 }, { ttl: '3651d' }),
    ).rejects.toThrow('RateLimitService.override: ttl must be at most 10 years');
    await expect(
      setOverride(a.registry, 'a'.repeat(65), { threshold: 5 }, undefined),
    ).rejects.toThrow(
      'RateLimitService.override: policyName must be a policy name: 1 to 64 letters, digits or _ . - *, got 65 characters',
    );
    expect(await redis().shared.exists(`${p}:{overrides}`)).toBe(0);
  });

  it(`refuses a new override past ${MAX_OVERRIDES} in force, but replaces one, and takes one after a clear`, async () => {
    const p = prefix();
    const key = `${p}:{overrides}`;
    const fields: string[] = [];
    for (let i = 0; i < MAX_OVERRIDES; i++) {
      fields.push(JSON.stringify(['api', `t${i}`]), '0 {"threshold":1}');
    }
    await redis().shared.hset(key, ...fields);
    await redis().shared.pexpire(key, 600_000);
    const a = await instance(p);
    expect(a.registry.size).toBe(MAX_OVERRIDES);
    await expect(
      setOverride(a.registry, 'api', { threshold: 2 }, { tracker: 'new' }),
    ).rejects.toThrow(
      `RateLimitService.override: at most ${MAX_OVERRIDES} overrides may be in force`,
    );
    expect(await redis().shared.hexists(key, '["api","new"]')).toBe(0);
    await setOverride(a.registry, 'api', { threshold: 2 }, { tracker: 't7' });
    expect(await clearOverride(a.registry, 'api', { tracker: 't8' })).toBe(true);
    await setOverride(a.registry, 'api', { threshold: 2 }, { tracker: 'new' });
    expect(await redis().shared.hexists(key, '["api","new"]')).toBe(1);
    expect(a.registry.size).toBe(MAX_OVERRIDES);
  });

  it('skips entries written by hand that are not valid, with one warning, and applies the others', async () => {
    const p = prefix();
    const key = `${p}:{overrides}`;
    await redis().shared.hset(
      key,
      '["api"]',
      '0 {"threshold":-5}',
      JSON.stringify(['api', 'y'.repeat(2000)]),
      '0 {"threshold":5}',
      'not json',
      '0 {"threshold":5}',
      '["other"]',
      'nonsense',
      '["api","ok"]',
      '0 {"threshold":4}',
    );
    await redis().shared.pexpire(key, 600_000);
    const a = await instance(p);
    expect(a.registry.size).toBe(1);
    expect(a.registry.apply([API], encodeKeyPart('ok'), false)[0].threshold).toBe(4);
    expect(thresholdOf(a)).toBe(3);
    await afterListings([a]);
    expect(a.warnings).toEqual([
      expect.stringMatching(/^Skipped 4 stored limit override\(s\) that are not valid \(/),
    ]);
    expect(a.warnings[0]).toMatch(/its threshold is not an integer from 1 to 1000000000/);
    expect(a.warnings[0].length).toBeLessThan(1000);
  });

  it('tells of overrides gone with a FLUSHALL once on each instance that had them; the declared limits apply again', async () => {
    const p = prefix();
    const [a, b] = [await instance(p), await instance(p, true)];
    await setOverride(a.registry, 'api', { threshold: 7 }, undefined);
    await setOverride(a.registry, 'api', { threshold: 9 }, { tracker: 't1', ttl: '1h' });
    await setOverride(a.registry, 'other', { threshold: 5 }, undefined);
    await holds(b, 3);
    expect(thresholdOf(b)).toBe(7);

    await redis().shared.flushall();
    await holds(a, 0);
    await holds(b, 0);
    expect(a.registry.apply([API, OTHER], undefined, false)).toEqual([API, OTHER]);
    expect(b.registry.apply([API, OTHER], undefined, false)).toEqual([API, OTHER]);
    await afterListings([a, b]);
    for (const { warnings } of [a, b]) {
      expect(warnings).toEqual([expect.stringMatching(VANISHED)]);
      expect(warnings[0]).toMatch(/^3 limit override\(s\)/);
      expect(warnings[0]).toMatch(/declared limits apply again/);
    }
    // Set again, they are in force again, and nothing more is said.
    await setOverride(a.registry, 'api', { threshold: 8 }, undefined);
    await holds(b, 1);
    await afterListings([a, b]);
    expect([a.warnings.length, b.warnings.length]).toEqual([1, 1]);
  });

  it('says nothing of overrides cleared through the API, on either instance, its notice heard or missed', async () => {
    const p = prefix();
    const [a, b] = [await instance(p), await instance(p, true)];
    await setOverride(a.registry, 'api', { threshold: 7 }, undefined);
    await setOverride(a.registry, 'other', { threshold: 5 }, { tracker: 't1' });
    await holds(b, 2);
    expect(await clearOverride(a.registry, 'other', { tracker: 't1' })).toBe(true);
    await holds(b, 1);
    // The last one cleared and another set before the deaf instance reads again.
    expect(await clearOverride(a.registry, 'api', undefined)).toBe(true);
    await setOverride(a.registry, 'other', { threshold: 4 }, undefined);
    await waitFor('the new one on b', 5000, async () =>
      b.registry.apply([OTHER], undefined, false)[0].threshold === 4 ? true : 'not yet',
    );
    expect(b.registry.size).toBe(1);
    expect(await clearOverride(b.registry, 'other', undefined)).toBe(true);
    await holds(a, 0);
    await afterListings([a, b]);
    expect([a.warnings, b.warnings]).toEqual([[], []]);
  });

  it('says nothing of an override whose ttl ran out', async () => {
    const p = prefix();
    const [a, b] = [await instance(p), await instance(p, true)];
    await setOverride(a.registry, 'api', { threshold: 7 }, { ttl: '3s' });
    await setOverride(a.registry, 'other', { threshold: 5 }, { tracker: 't1', ttl: '2s' });
    await holds(b, 2);
    await holds(a, 0);
    await holds(b, 0);
    // The hash ended with the last of them.
    expect(await redis().shared.exists(`${p}:{overrides}`)).toBe(0);
    await afterListings([a, b]);
    expect([a.warnings, b.warnings]).toEqual([[], []]);
  });

  it('tells of overrides gone with a restart of a Redis without persistence, once per instance', async () => {
    const p = prefix();
    const [a, b] = [await instance(p), await instance(p, true)];
    await setOverride(a.registry, 'api', { threshold: 7 }, undefined);
    await holds(b, 1);
    await redis().kill();
    await redis().restart();
    await holds(a, 0, 20_000);
    await holds(b, 0, 20_000);
    expect(thresholdOf(a)).toBe(3);
    await afterListings([a, b]);
    for (const { warnings } of [a, b]) {
      expect(warnings).toEqual([expect.stringMatching(/^1 limit override\(s\) in force vanished/)]);
    }
  }, 60_000);
});
