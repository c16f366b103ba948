/** The slot-group key layout: where keys go, and what it accepts. */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisStore } from '../../lib/index.js';
import { CLUSTER_SLOTS, keySlot } from '../../lib/stores/redis/key-slot.js';
import { MAX_GROUPS, SlotGroups } from '../../lib/stores/redis/slot-groups.js';

const TRACKERS = Array.from(
  { length: 2000 },
  (_, i) => `rl:{GET /items|user:${i}}:0:sw:100-per-1m`,
);

describe('slot groups', () => {
  it('puts every key in one of its groups, and each key of one tag in the same one', () => {
    const groups = new SlotGroups(48);
    const slots = new Set(TRACKERS.map((key) => keySlot(groups.place(key))));
    expect(slots.size).toBe(48);
    const key = TRACKERS[7];
    const ledger = `${key}|pending`;
    const other = key.replace(':0:sw:', ':1:fw:');
    expect(keySlot(groups.place(ledger))).toBe(keySlot(groups.place(key)));
    expect(keySlot(groups.place(other))).toBe(keySlot(groups.place(key)));
  });

  it("keeps the key's name after the group's tag, so no two keys meet", () => {
    const groups = new SlotGroups(48);
    const placed = groups.place('rl:{GET /items|user:7}:0:sw:100-per-1m');
    expect(placed).toMatch(/^rl:\{g\d+\.\d+\}\{GET \/items\|user:7\}:0:sw:100-per-1m$/);
    expect(groups.place('no-tag')).toMatch(/^\{g\d+\.\d+\}no-tag$/);
    const all = [...TRACKERS, 'no-tag', 'x{', 'x{}y', '{a}b', '{a}c'];
    expect(new Set(all.map((key) => groups.place(key))).size).toBe(all.length);
  });

  it('spreads the groups evenly over runs of slots, as masters hold them', () => {
    const groups = new SlotGroups(48);
    const slots = new Set(TRACKERS.map((key) => keySlot(groups.place(key))));
    const third = CLUSTER_SLOTS / 3;
    const perThird = [0, 1, 2].map(
      (t) => [...slots].filter((s) => Math.floor(s / third) === t).length,
    );
    expect(perThird).toEqual([16, 16, 16]);
  });

  it('finds the same tags in every process: the layout is the same for every instance', () => {
    expect(new SlotGroups(48).place('rl:{user:1}:0:p')).toBe(
      new SlotGroups(48).place('rl:{user:1}:0:p'),
    );
    // Group tags are found, not drawn: this one is fixed for as long as the layout is.
    expect(new SlotGroups(1).place('rl:{user:1}:0:p')).toBe('rl:{g0.0}{user:1}:0:p');
  });

  it.each([0, -1, 1.5, MAX_GROUPS + 1, '8', null])(
    'refuses slotGroups: %p, naming the field',
    (value) => {
      expect(() => new SlotGroups(value as number)).toThrow(/RedisStore.*slotGroups/);
    },
  );

  it('is checked when the store is built', () => {
    const client = new Redis({ lazyConnect: true });
    expect(() => new RedisStore({ client, slotGroups: 0 })).toThrow(
      'RedisStore: slotGroups must be an integer from 1 to 1024, got 0',
    );
    expect(new RedisStore({ client, slotGroups: MAX_GROUPS })).toBeInstanceOf(RedisStore);
    client.disconnect();
  });
});
