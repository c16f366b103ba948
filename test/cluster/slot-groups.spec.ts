/**
 * Slot groups on a 3-master cluster: the store contract again, every key in its group's slot,
 * decisions on different trackers batched together, and exact limits when trackers of one group
 * race.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { RedisStore } from '../../lib/index.js';
import { resolvePolicy } from '../../lib/policy/rate-limit.policy.js';
import { keySlot } from '../../lib/stores/redis/key-slot.js';
import { SlotGroups } from '../../lib/stores/redis/slot-groups.js';
import { storeContract } from '../contract/store/store.suite.js';
import { CLIENT_KINDS } from '../support/clients.js';
import { stateKeys } from '../support/decision-ids.js';
import { useCluster } from '../support/stores.js';

const cluster = useCluster();
const GROUPS = 6;

describe.each(CLIENT_KINDS)('slot groups on the cluster store through %s', (kind) => {
  storeContract({
    storeClient: () => cluster().connect(kind),
    inspect: () => cluster().client(),
    slotGroups: GROUPS,
  });

  async function fcalls(): Promise<number> {
    const masters = await cluster().masters();
    let calls = 0;
    for (const master of masters) {
      const stats = String(await cluster().admin(master).info('commandstats'));
      calls += Number(/cmdstat_fcall:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    }
    return calls;
  }

  async function storedKeys(pattern: string): Promise<string[]> {
    const masters = await cluster().masters();
    const keys = await Promise.all(masters.map((m) => cluster().admin(m).keys(pattern)));
    return keys.flat();
  }

  it("keeps 300 trackers' keys in the groups' slots and decides them in batches", async () => {
    const store = new RedisStore({
      client: await cluster().connect(kind),
      slotGroups: GROUPS,
      answerWithinMs: 5000,
    });
    await store.warmUp();
    const prefix = `grouped-${randomUUID()}`;
    const policy = resolvePolicy({ period: '1h', threshold: 10 }, 'grouped');
    const before = await fcalls();
    const decisions = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        store.consume([`${prefix}:{user:${i}}:0:p`], [policy], [1]),
      ),
    );
    expect(decisions.every((d) => d.allowed && d.degraded === undefined)).toBe(true);
    // The first goes at once; the rest wait for the turn's end and go 8 at a time per slot.
    expect((await fcalls()) - before).toBeLessThan(100);
    // Decision ids live in their group's slot too: every key the batch wrote is in one of them.
    const written = await storedKeys(`${prefix}*`);
    const slots = new Set(written.map(keySlot));
    const keys = stateKeys(written);
    expect(keys).toHaveLength(300);
    expect(slots.size).toBeLessThanOrEqual(GROUPS);
    const groups = new SlotGroups(GROUPS);
    expect(new Set(keys)).toEqual(
      new Set(Array.from({ length: 300 }, (_, i) => groups.place(`${prefix}:{user:${i}}:0:p`))),
    );
    await store.close();
  });

  it('lets exactly the limit through for each of 12 trackers racing in 4 stores', async () => {
    const stores = await Promise.all(
      [0, 1, 2, 3].map(
        async () =>
          new RedisStore({
            client: await cluster().connect(kind),
            slotGroups: GROUPS,
            answerWithinMs: 5000,
          }),
      ),
    );
    await Promise.all(stores.map((s) => s.warmUp()));
    const prefix = `race-${randomUUID()}`;
    const policy = resolvePolicy({ period: '1h', threshold: 7 }, 'race');
    const trackers = Array.from({ length: 12 }, (_, i) => `${prefix}:{t${i}}:0:p`);
    // Each store sends 5 per tracker at once: 20 per tracker, 240 in all, of which 7 each pass.
    const decisions = await Promise.all(
      stores.flatMap((store) =>
        trackers.flatMap((key) =>
          Array.from({ length: 5 }, () =>
            store.consume([key], [policy], [1]).then((d) => ({ key, d })),
          ),
        ),
      ),
    );
    expect(decisions.filter(({ d }) => d.degraded !== undefined)).toEqual([]);
    for (const key of trackers) {
      expect(decisions.filter((x) => x.key === key && x.d.allowed)).toHaveLength(7);
    }
    await Promise.all(stores.map((s) => s.close()));
  });
});
