/**
 * The overrides on a 3-master cluster: the hash lives in one slot (its own hash tag), and a change
 * published from the script on that slot's master reaches a subscriber on whichever node its
 * client picked (a plain PUBLISH goes to every node of a cluster).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../lib/index.js';
import { RedisOverrideSource } from '../../lib/overrides/redis-override-source.js';
import { ALL_CLIENT_KINDS } from '../support/clients.js';
import { useCluster } from '../support/stores.js';
import { waitFor } from '../support/wait-for.js';

const cluster = useCluster();

describe.each(ALL_CLIENT_KINDS)('the Redis override source on a cluster through %s', (kind) => {
  const opened: RedisOverrideSource[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((source) => source.close()));
  });

  async function source(prefix: string): Promise<RedisOverrideSource> {
    const store = new RedisStore({ client: await cluster().connect(kind) });
    const made = RedisOverrideSource.forStore(store, prefix);
    opened.push(made);
    return made;
  }

  it('sets, lists and clears in one slot, with a TTL on the hash', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    await a.set({ policy: 'api', tracker: 'a{b}:c', limit: { threshold: 3 }, ttlMs: 60_000 });
    await a.set({ policy: 'api', limit: { threshold: 9 } });
    const listed = (await a.list()).entries;
    expect(listed).toHaveLength(2);
    expect(listed.find((e) => e.tracker === 'a{b}:c')?.expiresInMs).toBeGreaterThan(50_000);
    expect(await cluster().client().pttl(`${prefix}:{overrides}`)).toBeGreaterThan(0);
    expect(await a.clear('api', 'a{b}:c')).toBe(true);
    expect((await a.list()).entries).toEqual([{ policy: 'api', limit: { threshold: 9 } }]);
  });

  it('keeps its generation in the same hash, counted up by each change, and gone with the data', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    await a.set({ policy: 'api', limit: { threshold: 9 } });
    const first = (await a.list()).generation!;
    expect(first.version).toBe(1);
    await a.set({ policy: 'api', tracker: 't', limit: { threshold: 3 } });
    await a.clear('api', 't');
    expect((await a.list()).generation).toEqual({ epoch: first.epoch, version: 3 });
    // The last override cleared, the generation stays: a clear is not a loss.
    await a.clear('api');
    expect((await a.list()).generation).toEqual({ epoch: first.epoch, version: 4 });
    await cluster().client().del(`${prefix}:{overrides}`);
    expect((await a.list()).generation).toBeUndefined();
  });

  it('tells another instance of a change published from the script, within 1 s', async () => {
    const prefix = `ov-${randomUUID()}`;
    const a = await source(prefix);
    const b = await source(prefix);
    const seen = { calls: 0 };
    b.watch(() => void seen.calls++);
    await waitFor('the subscription in place', 5000, async () => seen.calls > 0 || 'no call');
    for (const threshold of [1, 2, 3]) {
      seen.calls = 0;
      await a.set({ policy: 'api', limit: { threshold } });
      await waitFor(`change ${threshold} told to b`, 1000, async () => seen.calls > 0 || 'none');
      expect((await b.list()).entries).toEqual([{ policy: 'api', limit: { threshold } }]);
    }
  });
});
