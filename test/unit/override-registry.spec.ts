/** The override registry and the in-process source, on their own: indexing, reloads, expiry. */
import { afterEach, describe, expect, it } from '@jest/globals';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { KnownPolicies } from '../../lib/overrides/known-policies.js';
import { MemoryOverrideSource } from '../../lib/overrides/memory-override-source.js';
import { OverrideRegistry } from '../../lib/overrides/override-registry.js';
import {
  type OverrideListing,
  type OverrideSource,
  type OverrideWrite,
} from '../../lib/overrides/override-source.js';
import { encodeKeyPart, policyTrackerPart } from '../../lib/keys/route-keys.js';
import { TestClock } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';

/** A memory source that counts its listings, can fail them, and can drop its change notices. */
class ProbeSource implements OverrideSource {
  readonly inner: MemoryOverrideSource;
  lists = 0;
  failing = false;
  silent = false;
  closed = false;
  private release: (() => void) | undefined;
  private held: Promise<void> | undefined;

  constructor(clock: () => number = new TestClock().now) {
    this.inner = new MemoryOverrideSource(clock);
  }
  set(write: OverrideWrite) {
    return this.inner.set(write);
  }
  clear(policy: string, tracker?: string) {
    return this.inner.clear(policy, tracker);
  }
  async list(): Promise<OverrideListing> {
    this.lists++;
    if (this.held !== undefined) await this.held;
    if (this.failing) throw new Error('no route to host');
    return this.inner.list();
  }
  watch(changed: () => void) {
    this.inner.watch(() => {
      if (!this.silent) changed();
    });
  }
  close() {
    this.closed = true;
    return this.inner.close();
  }
  /** Listings wait until `open()`. */
  hold() {
    this.held = new Promise((resolve) => (this.release = resolve));
  }
  open() {
    this.release?.();
    this.held = undefined;
  }
}

const logs: string[] = [];
const logger = { log: (m: string) => logs.push(`log ${m}`), warn: (m: string) => logs.push(m) };
const registries: OverrideRegistry[] = [];

function registry(source: OverrideSource, refreshMs = 60_000) {
  const r = new OverrideRegistry(source, new KnownPolicies(), refreshMs, logger);
  registries.push(r);
  return r;
}

afterEach(async () => {
  logs.length = 0;
  await Promise.all(registries.splice(0).map((r) => r.close()));
});

const API = resolvePolicy({ name: 'api', period: '1m', threshold: 3 }, 'test');
const OTHER = resolvePolicy({ name: 'other', period: '1m', threshold: 3 }, 'test');
const BUCKET = resolvePolicy(
  { name: 'bucket', algorithm: 'token-bucket', period: '1s', threshold: 10, burst: 4 },
  'test',
);

describe('OverrideRegistry', () => {
  it('with nothing in force, hands back the very same policies', async () => {
    const r = registry(new ProbeSource());
    await r.start(1000);
    expect(r.size).toBe(0);
    const policies = [API, OTHER];
    expect(r.apply(policies, undefined, false)).toBe(policies);
  });

  it('replaces a named policy with the same id, name and code, built once per change', async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    await source.set({ policy: 'api', limit: { threshold: 7, periodMs: 5000 } });
    await r.reload();
    const policies = [API, OTHER];
    const applied = r.apply(policies, undefined, false);
    expect(applied).not.toBe(policies);
    expect(applied[1]).toBe(OTHER);
    expect(applied[0]).toEqual({
      ...API,
      threshold: 7,
      burst: 7,
      periodMs: 5000,
      periodUs: 5_000_000,
    });
    expect(Object.isFrozen(applied[0])).toBe(true);
    expect(r.apply([API], undefined, false)[0]).toBe(applied[0]);
    // Listed again unchanged: still the same object.
    await r.reload();
    expect(r.apply([API], undefined, false)[0]).toBe(applied[0]);
    // Changed: built anew.
    await source.set({ policy: 'api', limit: { threshold: 8 } });
    await r.reload();
    expect(r.apply([API], undefined, false)[0]).toMatchObject({ threshold: 8, periodMs: 60_000 });
  });

  it('keeps what a lasting list became until the next change, frozen', async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    const policies = [API, OTHER];
    expect(r.apply(policies, undefined, true)).toBe(policies);
    await source.set({ policy: 'api', limit: { threshold: 7 } });
    await r.reload();
    const applied = r.apply(policies, undefined, true);
    expect(applied.map((p) => p.threshold)).toEqual([7, 3]);
    expect(Object.isFrozen(applied)).toBe(true);
    expect(r.apply(policies, undefined, true)).toBe(applied);
    // A list made per call is never kept.
    expect(r.apply(policies, undefined, false)).not.toBe(applied);
    await source.set({ policy: 'api', limit: { threshold: 8 } });
    await r.reload();
    expect(r.apply(policies, undefined, true).map((p) => p.threshold)).toEqual([8, 3]);
    await source.clear('api');
    await r.reload();
    expect(r.apply(policies, undefined, true)).toBe(policies);
  });

  it("prefers one tracker's override to everyone's, matching the module's and a policy's own tracker", async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    await source.set({ policy: 'api', limit: { threshold: 1 } });
    await source.set({ policy: 'api', tracker: 'acme', limit: { threshold: 50 } });
    await r.reload();
    expect(r.wantsTrackers([OTHER])).toBe(false);
    expect(r.wantsTrackers([OTHER, API])).toBe(true);
    const threshold = (part: string) => r.apply([API], part, false)[0].threshold;
    expect(threshold(encodeKeyPart('acme'))).toBe(50);
    expect(threshold(policyTrackerPart('acme', 'test')!)).toBe(50);
    expect(threshold(encodeKeyPart('globex'))).toBe(1);
    expect(
      r
        .apply([API, API], [encodeKeyPart('x'), encodeKeyPart('acme')], false)
        .map((p) => p.threshold),
    ).toEqual([1, 50]);
  });

  it("keeps a bucket's own burst when it set one apart, else follows the new threshold", async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    await source.set({ policy: 'bucket', limit: { threshold: 20 } });
    await r.reload();
    expect(r.apply([BUCKET], undefined, false)[0]).toMatchObject({ threshold: 20, burst: 4 });
    await source.set({ policy: 'bucket', limit: { threshold: 20, burst: 9 } });
    await r.reload();
    expect(r.apply([BUCKET], undefined, false)[0]).toMatchObject({ threshold: 20, burst: 9 });
  });

  it('leaves a policy its own limit, with one warning, when the override does not fit it', async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    await source.set({ policy: 'bucket', limit: { threshold: 1, periodMs: 3.6e9, burst: 1e6 } });
    await r.reload();
    expect(r.apply([BUCKET], undefined, false)[0]).toBe(BUCKET);
    expect(r.apply([BUCKET], undefined, false)[0]).toBe(BUCKET);
    expect(logs).toEqual([expect.stringMatching(/override of policy "bucket" does not fit/)]);
  });

  it('reads the source once for calls made while a listing is under way, and once more after', async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    const before = source.lists;
    source.hold();
    const first = r.reload();
    const calls = [r.reload(), r.reload(), r.reload()];
    source.open();
    await Promise.all([first, ...calls]);
    expect(source.lists - before).toBe(2);
  });

  it('hears of a change through watch, long before its refresh period', async () => {
    // The period is a minute, so an override seen within the wait came by the notice.
    const source = new ProbeSource();
    const r = registry(source, 60_000);
    await r.start(1000);
    await source.set({ policy: 'api', limit: { threshold: 7 } });
    await waitFor('the notice', 10_000, async () => r.size === 1 || `size ${r.size}`);
    expect(source.lists).toBe(2);
  });

  it('hears of a change without a notice within its refresh period', async () => {
    const source = new ProbeSource();
    const r = registry(source, 200);
    await r.start(1000);
    source.silent = true;
    await source.set({ policy: 'api', limit: { threshold: 7 } });
    expect(r.size).toBe(0);
    await waitFor('the refresh', 10_000, async () => r.size === 1 || `size ${r.size}`);
    await source.clear('api');
    await waitFor('the next refresh', 10_000, async () => r.size === 0 || `size ${r.size}`);
  });

  it('drops an override when it ends, without a notice or a refresh', async () => {
    // Real time, so that the entry has ended when the timer fires.
    const source = new ProbeSource(Date.now);
    const r = registry(source);
    await r.start(1000);
    source.silent = true;
    await source.set({ policy: 'api', limit: { threshold: 7 }, ttlMs: 150 });
    await r.reload();
    expect(r.size).toBe(1);
    await waitFor('the expiry', 1000, async () => r.size === 0 || `size ${r.size}`);
  });

  it('keeps the overrides last read while the source fails, warning once, and says when it is back', async () => {
    const source = new ProbeSource();
    const r = registry(source);
    await r.start(1000);
    await source.set({ policy: 'api', limit: { threshold: 7 } });
    await r.reload();
    source.failing = true;
    await r.reload();
    await r.reload();
    expect(r.size).toBe(1);
    expect(r.apply([API], undefined, false)[0].threshold).toBe(7);
    expect(logs).toEqual([
      expect.stringMatching(/Could not read the limit overrides \(no route to host\)/),
    ]);
    source.failing = false;
    await r.reload();
    expect(logs[1]).toBe('log The limit overrides are read again');
  });

  it('does not wait past its bound for a first listing, and closes the source', async () => {
    const source = new ProbeSource();
    await source.set({ policy: 'api', limit: { threshold: 7 } });
    source.hold();
    const r = registry(source);
    // The listing is held until opened: start() resolving at all is its bound at work (a start
    // that waited for the listing would never resolve), and it resolved with nothing listed yet.
    await r.start(50);
    expect({ lists: source.lists, size: r.size }).toEqual({ lists: 1, size: 0 });
    source.open();
    await r.reload();
    expect(r.size).toBe(1);
    await r.close();
    expect(source.closed).toBe(true);
  });
});

describe('MemoryOverrideSource', () => {
  it('lists what is in force with the time left, ends entries by its clock, and tells its watchers', async () => {
    const clock = new TestClock();
    const source = new MemoryOverrideSource(clock.now);
    let changes = 0;
    source.watch(() => changes++);
    await source.set({ policy: 'api', limit: { threshold: 5 } });
    await source.set({ policy: 'api', tracker: 'acme', limit: { threshold: 9 }, ttlMs: 1000 });
    clock.advance(400);
    expect((await source.list()).entries).toEqual([
      { policy: 'api', limit: { threshold: 5 } },
      { policy: 'api', tracker: 'acme', limit: { threshold: 9 }, expiresInMs: 600 },
    ]);
    clock.advance(600);
    expect((await source.list()).entries).toEqual([{ policy: 'api', limit: { threshold: 5 } }]);
    expect(await source.clear('api', 'acme')).toBe(false);
    expect(await source.clear('api')).toBe(true);
    expect((await source.list()).entries).toEqual([]);
    expect(changes).toBe(3);
  });
});
