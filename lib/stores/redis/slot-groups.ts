import { configError } from '../../policy/validation.js';
import { type Limits } from '../../store-contract/store-call.js';
import { CLUSTER_SLOTS, keySlot } from './key-slot.js';

/**
 * The key layout `RedisStore`'s `slotGroups` asks for: every key goes to one of `count` hash slots,
 * so that decisions on different trackers share a slot and a Redis Cluster master decides them in
 * one call (a batch holds one slot; see DecisionBatcher). In the default layout each tracker has a
 * slot of its own, and on a cluster almost every decision goes alone.
 *
 * A key keeps its name and gains a group's hash tag in front of its own, which Redis then no
 * longer hashes (only the first tag counts): `rate-limit:{g5.3}{GET /items|ip:203.0.113.7}:0:…`.
 * The group is chosen by the slot the key would have had, so every key of one decision (they share
 * a tag) lands in the same group, and the groups divide the trackers evenly. Group `i`'s tag is the
 * first `g<i>.<n>` whose slot lies in the `i`-th of `count` equal runs of slots: every process
 * finds the same tags, and the groups spread over the masters as evenly as the slots do.
 *
 * @example
 * ```ts
 * const groups = new SlotGroups(48);
 * groups.place('rate-limit:{GET /items|ip:203.0.113.7}:0:sw:100-per-1m');
 * // 'rate-limit:{g9.4}{GET /items|ip:203.0.113.7}:0:sw:100-per-1m' (one of 48 slots)
 * ```
 */
// More groups batch less; past a thousand or so a 3-master cluster's batches hardly form at all.
// Finding the tags takes about MAX_GROUPS² slot computations, a few ms at this bound.
export const MAX_GROUPS = 1024;

export class SlotGroups {
  private readonly tags: readonly string[];

  constructor(readonly count: number) {
    if (!Number.isInteger(count) || count < 1 || count > MAX_GROUPS) {
      throw configError('RedisStore', 'slotGroups', count, `an integer from 1 to ${MAX_GROUPS}`);
    }
    this.tags = Array.from({ length: count }, (_, i) => groupTag(i, count));
  }

  /** `key` in its group: the group's tag before the key's own, or before the key if it has none. */
  place(key: string): string {
    const tag = this.tags[Math.floor((keySlot(key) * this.count) / CLUSTER_SLOTS)];
    const open = key.indexOf('{');
    return open < 0 ? `{${tag}}${key}` : `${key.slice(0, open)}{${tag}}${key.slice(open)}`;
  }

  /** `limits` with every key, ledgers included, in its group. */
  placeAll(limits: Limits): Limits {
    const ledgers = limits.ledgers;
    return {
      ...limits,
      keys: limits.keys.map((key) => this.place(key)),
      ...(ledgers === undefined
        ? {}
        : { ledgers: ledgers.map((key) => (key === undefined ? key : this.place(key))) }),
    };
  }
}

// The first `g<group>.<n>` whose slot lies in the group's run of slots. A run holds about
// 16384 / count slots, so about `count` tries find one, once per store.
function groupTag(group: number, count: number): string {
  for (let n = 0; ; n++) {
    const tag = `g${group}.${n}`;
    if (Math.floor((keySlot(tag) * count) / CLUSTER_SLOTS) === group) return tag;
  }
}
