/** The values an override puts in place of a policy's own, in store units. */
export interface LimitOverride {
  readonly threshold: number;
  /** In place of the policy's period; undefined keeps the policy's own. */
  readonly periodMs?: number;
  /** In place of the policy's burst (bucket algorithms only); undefined keeps the policy's own. */
  readonly burst?: number;
}

/** One override in force: for every policy of that name, or for one tracker's quota under it. */
export interface OverrideEntry {
  /** The name of the policies it applies to. */
  readonly policy: string;
  /** The tracker value it applies to; undefined for every tracker. */
  readonly tracker?: string;
  readonly limit: LimitOverride;
  /** Time left before it ends by itself, as the source knows it when listed; undefined: until cleared. */
  readonly expiresInMs?: number;
}

/** What a new override is stored with. */
export interface OverrideWrite {
  readonly policy: string;
  readonly tracker?: string;
  readonly limit: LimitOverride;
  /** How long it stays in force; undefined: until cleared. */
  readonly ttlMs?: number;
}

/** An entry the store holds that is not an override this version can read: skipped, and why. */
export interface SkippedOverride {
  /** The entry as the store names it (its hash field), cut short when long. */
  readonly id: string;
  readonly reason: string;
}

/**
 * Which copy of the stored overrides a listing read: created with the first override stored, and
 * counted up by every change. Another `epoch`, none at all, or a lower `version` than a listing
 * before means the overrides were lost (flushed, evicted, a restart without persistence, a
 * failover that lost writes) rather than cleared.
 */
export interface OverrideGeneration {
  readonly epoch: string;
  readonly version: number;
}

/** What one reading of the source found. */
export interface OverrideListing {
  /** Every override in force, those that ended left out. */
  readonly entries: OverrideEntry[];
  /** Entries stored that could not be read as overrides (written by hand, or by another version). */
  readonly skipped: SkippedOverride[];
  /** Undefined where the overrides cannot vanish without this process (kept in it) or none exist. */
  readonly generation?: OverrideGeneration;
}

/**
 * Where the overrides in force live: in this process for the memory store, in Redis for every
 * instance on the redis store. The registry that applies them reads them all through `list()`,
 * again each time `watch` reports a change and on a fixed period besides, so that a change
 * notice that never arrives delays an instance by one period at most.
 */
export interface OverrideSource {
  /**
   * Stores an override, replacing any with the same policy and tracker, and tells every watcher.
   * Resolves false, storing nothing, when it is a new one and `MAX_OVERRIDES` are in force.
   */
  set(write: OverrideWrite): Promise<boolean>;
  /** Removes the override of that policy and tracker; resolves whether there was one. */
  clear(policy: string, tracker?: string): Promise<boolean>;
  /** Every override in force, those that ended left out, and what else the store holds. */
  list(): Promise<OverrideListing>;
  /** Calls `changed` whenever an override is set or cleared, here or on another instance. */
  watch(changed: () => void): void;
  /** Stops watching; frees what the source holds (a subscriber connection). */
  close(): Promise<void>;
}
