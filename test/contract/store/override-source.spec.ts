/**
 * The overrides kept in Redis: set, cleared and listed by one script call each on Redis's clock,
 * in one hash per key prefix that always has a TTL; every change published, and followed by
 * every other instance's subscription, which comes back (and says so) after its connection drops.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { type Redis } from 'ioredis';
import { RedisStore } from '../../../lib/index.js';
import {
  LASTING_OVERRIDE_HORIZON_MS,
  RedisOverrideSource,
} from '../../../lib/overrides/redis-override-source.js';
import { ALL_CLIENT_KINDS, type ClientKind } from '../../support/clients.js';
import { startRedis } from '../../support/redis-server.js';
import { useRedis } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { asUserWithout } from '../../support/acl-users.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** When the override in `field` of `key` ends, in ms of Redis's clock, minus Redis's time now. */
async function endsInMs(admin: Redis, key: string, field: string): Promise<number> {
  const [stored, [seconds, micros]] = await Promise.all([
    admin.hget(key, field),
    admin.time() as Promise<[number | string, number | string]>,
  ]);
  return Number(stored!.split(' ')[0]) - (Number(seconds) * 1000 + Number(micros) / 1000);
}

/**
 * Resolves once changes made through `from` reach the watcher of `seen` again: set until one is
 * told within 1 s (a subscription that is coming back may miss the first).
 */
async function toldOfChangesAgain(from: RedisOverrideSource, seen: { calls: number }) {
  await waitFor('a change told again', 10_000, async () => {
    seen.calls = 0;
    await from.set({ policy: 'again', limit: { threshold: 1 } });
    const until = Date.now() + 1000;
    while (seen.calls === 0 && Date.now() < until) await sleep(20);
    return seen.calls > 0 || 'no call';
  });
}

/** A watcher that counts the calls it receives. */
function counter() {
  const seen = { calls: 0 };
  return { seen, changed: () => void seen.calls++ };
}

describe.each(ALL_CLIENT_KINDS)('the Redis override source through %s', (kind: ClientKind) => {
  const redis = useRedis('redis');
  // GLIDE subscribes again by itself after a reconnection, without a word.
  const saysWhenBack = kind !== 'glide';
  const opened: RedisOverrideSource[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((source) => source.close()));
  });

  /** A source on a new client of `kind`, as one instance of the application would have. */
  async function source(prefix: string): Promise<RedisOverrideSource> {
    const store = new RedisStore({ client: await redis().connect(kind) });
    const made = RedisOverrideSource.forStore(store, prefix);
    opened.push(made);
    return made;
  }

  /** Watches `on` and resolves once its subscription is in place (it says so with a call). */
  async function watching(on: RedisOverrideSource) {
    const { seen, changed } = counter();
    on.watch(changed);
    await waitFor('the subscription in place', 5000, async () => seen.calls > 0 || 'no call');
    seen.calls = 0;
    return seen;
  }

  it('lists what was set, replaces it by policy and tracker, and clears it', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    await a.set({ policy: 'api', limit: { threshold: 10 } });
    await a.set({
      policy: 'api',
      tracker: 't1',
      limit: { threshold: 5, periodMs: 2000, burst: 7 },
    });
    await a.set({ policy: 'api', tracker: 't1', limit: { threshold: 6 }, ttlMs: 60_000 });
    const listed = (await a.list()).entries;
    const byTracker = new Map(listed.map((e) => [e.tracker, e]));
    expect(listed).toHaveLength(2);
    expect(byTracker.get(undefined)).toEqual({ policy: 'api', limit: { threshold: 10 } });
    const t1 = byTracker.get('t1')!;
    expect(t1).toMatchObject({ policy: 'api', tracker: 't1', limit: { threshold: 6 } });
    expect(t1.expiresInMs).toBeGreaterThan(55_000);
    expect(t1.expiresInMs).toBeLessThanOrEqual(60_000);

    expect(await a.clear('api', 't1')).toBe(true);
    expect(await a.clear('api', 't1')).toBe(false);
    expect((await a.list()).entries).toEqual([{ policy: 'api', limit: { threshold: 10 } }]);
    expect(await a.clear('api')).toBe(true);
    expect((await a.list()).entries).toEqual([]);
    // The last override gone, the hash keeps its generation alone, with its TTL: a clear is told
    // apart from a loss of the data by it.
    const key = `${prefix}:{overrides}`;
    expect(await redis().shared.hkeys(key)).toEqual(['#generation']);
    expect(await redis().shared.pttl(key)).toBeGreaterThan(0);
  });

  it('keeps each prefix apart', async () => {
    const [one, two] = [`ov-${randomUUID()}`, `ov-${randomUUID()}`];
    const a = await source(one);
    const b = await source(two);
    await a.set({ policy: 'api', limit: { threshold: 1 } });
    expect((await b.list()).entries).toEqual([]);
    expect((await a.list()).entries).toHaveLength(1);
  });

  it('round-trips trackers of any characters', async () => {
    const a = await source(`ov-${randomUUID()}`);
    const trackers = ['a:b', '{tag}', '}{', 'line\nbreak', 'ünïcødé 🚦', '["api"]', '', ' '];
    for (const [i, tracker] of trackers.entries()) {
      await a.set({ policy: 'p:{x}', tracker, limit: { threshold: i + 1 } });
    }
    const listed = (await a.list()).entries;
    expect(listed.map((e) => [e.tracker, e.limit.threshold]).sort()).toEqual(
      trackers.map((t, i) => [t, i + 1]).sort(),
    );
    expect(listed.every((e) => e.policy === 'p:{x}')).toBe(true);
    for (const tracker of trackers) expect(await a.clear('p:{x}', tracker)).toBe(true);
    expect((await a.list()).entries).toEqual([]);
  });

  it('ends an override with a ttl on Redis time, and removes it from the hash', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    await a.set({ policy: 'short', limit: { threshold: 1 }, ttlMs: 300 });
    await a.set({ policy: 'lasting', limit: { threshold: 2 } });
    const left = await endsInMs(redis().shared, `${prefix}:{overrides}`, '["short"]');
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(300);
    const [short] = (await a.list()).entries.filter((e) => e.policy === 'short');
    expect(short.expiresInMs).toBeGreaterThan(0);
    expect(short.expiresInMs).toBeLessThanOrEqual(300);
    await sleep(400);
    expect((await a.list()).entries).toEqual([{ policy: 'lasting', limit: { threshold: 2 } }]);
    expect((await redis().shared.hkeys(`${prefix}:{overrides}`)).sort()).toEqual([
      '#generation',
      '["lasting"]',
    ]);
  });

  it('refuses a ttl the hash could not take as its TTL, writing nothing', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    for (const ttlMs of [0, -5, 1.5, Number.NaN, Infinity]) {
      await expect(a.set({ policy: 'p', limit: { threshold: 1 }, ttlMs })).rejects.toThrow(
        `RedisOverrideSource.set: ttlMs must be a positive whole number of ms, got ${ttlMs}`,
      );
    }
    expect(await redis().shared.exists(`${prefix}:{overrides}`)).toBe(0);
  });

  it('keeps a TTL on the hash: the longest override, the horizon for one without ttl', async () => {
    const prefix = `ov-${randomUUID()}`;
    const key = `${prefix}:{overrides}`;
    const a = await source(prefix);
    await a.set({ policy: 'p', limit: { threshold: 1 }, ttlMs: 5000 });
    let ttl = await redis().shared.pttl(key);
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5000);
    await a.set({ policy: 'q', limit: { threshold: 1 }, ttlMs: 1000 });
    expect(await redis().shared.pttl(key)).toBeGreaterThan(4000);
    await a.set({ policy: 'r', limit: { threshold: 1 } });
    ttl = await redis().shared.pttl(key);
    expect(ttl).toBeGreaterThan(LASTING_OVERRIDE_HORIZON_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(LASTING_OVERRIDE_HORIZON_MS);
    // A listing renews the horizon while an override without ttl is there.
    await redis().shared.pexpire(key, 10_000);
    await a.list();
    expect(await redis().shared.pttl(key)).toBeGreaterThan(LASTING_OVERRIDE_HORIZON_MS - 60_000);
  });

  it('keeps every override of two instances setting at once, the last set of each', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    // Two writes per tracker, one from each instance, all in flight together.
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? a : b).set({
          policy: 'race',
          tracker: `t${i % 20}`,
          limit: { threshold: i },
        }),
      ),
    );
    const listed = (await b.list()).entries;
    expect(listed).toHaveLength(20);
    for (const { tracker, limit } of listed) {
      const j = Number(tracker!.slice(1));
      expect([j, j + 20]).toContain(limit.threshold);
    }
  });

  it('works on its own reading of the clock where the server refuses TIME in scripts', async () => {
    const admin = redis().shared;
    await asUserWithout(admin, ['-time'], async (user) => {
      const store = new RedisStore({ client: await redis().connect(kind, { user }) });
      const prefix = `ov-${randomUUID()}`;
      const a = RedisOverrideSource.forStore(store, prefix);
      opened.push(a);
      const key = `${prefix}:{overrides}`;
      await a.set({ policy: 'p', limit: { threshold: 1 }, ttlMs: 10_000 });
      // Its end is on Redis's clock, read outside the script.
      const left = await endsInMs(admin, key, '["p"]');
      expect(left).toBeGreaterThan(9000);
      expect(left).toBeLessThanOrEqual(10_000);
      expect(await admin.pttl(key)).toBeGreaterThan(9000);
      await sleep(300);
      const [entry] = (await a.list()).entries;
      expect(entry.expiresInMs).toBeGreaterThan(8000);
      expect(entry.expiresInMs).toBeLessThanOrEqual(9700);
    });
  });

  it('tells another instance of a change, which its list shows, within 1 s', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    const seen = await watching(b);
    await a.set({ policy: 'api', tracker: 'x', limit: { threshold: 3 }, ttlMs: 10_000 });
    await waitFor('the change told to b', 1000, async () => seen.calls > 0 || 'no call');
    const listed = (await b.list()).entries;
    expect(listed).toMatchObject([{ policy: 'api', tracker: 'x', limit: { threshold: 3 } }]);

    seen.calls = 0;
    await a.clear('api', 'x');
    await waitFor('the clearing told to b', 1000, async () => seen.calls > 0 || 'no call');
    expect((await b.list()).entries).toEqual([]);
    // Clearing what is not there changes nothing, and tells nobody.
    seen.calls = 0;
    expect(await a.clear('api', 'x')).toBe(false);
    await a.set({ policy: 'marker', limit: { threshold: 1 } });
    await waitFor('the marker told to b', 1000, async () => seen.calls > 0 || 'no call');
    expect(seen.calls).toBe(1);
  });

  it('misses no change made while its subscription is still being set up', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    const { seen, changed } = counter();
    // Both at once: the change may be published before b subscribes.
    b.watch(changed);
    await a.set({ policy: 'early', limit: { threshold: 5 } });
    await waitFor('a call', 5000, async () => seen.calls > 0 || 'no call');
    expect((await b.list()).entries).toEqual([{ policy: 'early', limit: { threshold: 5 } }]);
  });

  it(`subscribes again after its connection is killed${saysWhenBack ? ', and says so' : ''}`, async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    const seen = await watching(b);
    await redis().shared.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    if (saysWhenBack) {
      await waitFor('a call once back', 5000, async () => seen.calls > 0 || 'no call');
    }
    await toldOfChangesAgain(a, seen);
  });

  it('stops telling once closed, leaving no subscriber connected', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    const seen = await watching(b);
    const channel = `${prefix}:{overrides}:changed`;
    const subscribers = async () =>
      ((await redis().shared.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1];
    expect(await subscribers()).toBe(1);
    await b.close();
    // GLIDE's core drops a closed client's connection some 3 s later.
    await waitFor('no subscriber', 5000, async () => (await subscribers()) === 0 || 'still');
    await a.set({ policy: 'unseen', limit: { threshold: 1 } });
    await sleep(100);
    expect(seen.calls).toBe(0);
  });
});

describe.each(ALL_CLIENT_KINDS)('the Redis override source on a failing server (%s)', (kind) => {
  it('rejects list and set while Redis is down, and never throws from watch', async () => {
    const redis = await startRedis();
    const store = new RedisStore({ client: await redis.connect(kind) });
    const prefix = `ov-${randomUUID()}`;
    const source = RedisOverrideSource.forStore(store, prefix);
    const { seen, changed } = counter();
    try {
      source.watch(changed);
      await waitFor('the subscription in place', 5000, async () => seen.calls > 0 || 'no call');
      await source.set({ policy: 'api', limit: { threshold: 2 } });
      await redis.kill();
      await sleep(100);
      await expect(source.list()).rejects.toThrow();
      await expect(source.set({ policy: 'api', limit: { threshold: 3 } })).rejects.toThrow();
      seen.calls = 0;
      await redis.restart();
      await waitFor('list working again', 10_000, async () => {
        await source.list();
        return true;
      });
      if (kind !== 'glide') {
        await waitFor('a call once back', 10_000, async () => seen.calls > 0 || 'no call');
      }
      const other = RedisOverrideSource.forStore(
        new RedisStore({ client: await redis.connect(kind) }),
        prefix,
      );
      await toldOfChangesAgain(other, seen);
    } finally {
      await source.close();
      await store.close();
      await redis.stop();
    }
  });
});
