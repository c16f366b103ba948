import { type OverrideEntry, type OverrideGeneration } from './override-source.js';

/**
 * An override with a ttl that is gone this close to its end, or past it, ended by itself: the
 * time left is read on Redis's clock and counted on this process's, a reply's trip apart.
 */
const ENDING_SLACK_MS = 2000;

/**
 * Tells, from one listing to the next, how many of the overrides in force were lost with the
 * stored data rather than cleared or ended. A clear (here or on any instance, its notice heard or
 * not) keeps the store's generation and counts its version up; a flush, an eviction, a restart
 * without persistence drop the generation with the overrides, and a failover that lost writes
 * turns its version back. So overrides gone while the generation went or turned back vanished,
 * unless their ttl had run out; overrides gone while it moved on were cleared or ended.
 */
export class VanishedOverrides {
  /** Per override last listed, by policy and tracker: when it ends on this clock (∞: never). */
  private endsAt = new Map<string, number>();
  private generation: OverrideGeneration | undefined;

  /** How many of the overrides listed last are gone from `entries` without a clear or an end. */
  count(
    entries: readonly OverrideEntry[],
    generation: OverrideGeneration | undefined,
    now: number,
  ): number {
    const endsAt = new Map<string, number>();
    for (const entry of entries) {
      const ends = entry.expiresInMs === undefined ? Infinity : now + entry.expiresInMs;
      endsAt.set(idOf(entry), ends);
    }
    let vanished = 0;
    if (lost(this.generation, generation)) {
      for (const [id, ends] of this.endsAt) {
        if (!endsAt.has(id) && ends - now > ENDING_SLACK_MS) vanished++;
      }
    }
    this.endsAt = endsAt;
    this.generation = generation;
    return vanished;
  }
}

/** Whether the data `before` was read from is gone: no generation now, another, or turned back. */
function lost(
  before: OverrideGeneration | undefined,
  now: OverrideGeneration | undefined,
): boolean {
  if (before === undefined) return false;
  return now === undefined || now.epoch !== before.epoch || now.version < before.version;
}

function idOf(entry: OverrideEntry): string {
  return entry.tracker === undefined
    ? JSON.stringify([entry.policy])
    : JSON.stringify([entry.policy, entry.tracker]);
}
