import { type Clock } from '../store-contract/store.interface.js';
import { MAX_OVERRIDES } from './override-bounds.js';
import {
  type OverrideEntry,
  type OverrideListing,
  type OverrideSource,
  type OverrideWrite,
} from './override-source.js';

interface Stored {
  readonly write: OverrideWrite;
  /** When it ends, by the source's clock; undefined: until cleared. */
  readonly endsAt: number | undefined;
}

/**
 * The overrides of one process, for the memory store (and a custom store): kept in a Map, ended
 * by the clock the module was given (else `Date.now`). Only this instance sees them, as only it
 * sees the memory store's counts.
 */
export class MemoryOverrideSource implements OverrideSource {
  private readonly entries = new Map<string, Stored>();
  private readonly watchers: Array<() => void> = [];

  constructor(private readonly clock: Clock = Date.now) {}

  async set(write: OverrideWrite): Promise<boolean> {
    const id = entryId(write.policy, write.tracker);
    if (!this.entries.has(id) && this.entries.size >= MAX_OVERRIDES) {
      // Only at the bound is it worth listing them all, which drops those that ended.
      await this.list();
      if (this.entries.size >= MAX_OVERRIDES) return false;
    }
    const endsAt = write.ttlMs === undefined ? undefined : this.clock() + write.ttlMs;
    this.entries.set(id, { write, endsAt });
    this.changed();
    return true;
  }

  clear(policy: string, tracker?: string): Promise<boolean> {
    const id = entryId(policy, tracker);
    const stored = this.entries.get(id);
    const had = stored !== undefined && !this.ended(stored, this.clock());
    this.entries.delete(id);
    if (had) this.changed();
    return Promise.resolve(had);
  }

  /** No generation: what this process holds cannot vanish without it. */
  list(): Promise<OverrideListing> {
    const now = this.clock();
    const listed: OverrideEntry[] = [];
    for (const [id, stored] of this.entries) {
      if (this.ended(stored, now)) {
        this.entries.delete(id);
        continue;
      }
      const { policy, tracker, limit } = stored.write;
      listed.push({
        policy,
        limit,
        ...(tracker === undefined ? {} : { tracker }),
        ...(stored.endsAt === undefined ? {} : { expiresInMs: stored.endsAt - now }),
      });
    }
    return Promise.resolve({ entries: listed, skipped: [] });
  }

  watch(changed: () => void): void {
    this.watchers.push(changed);
  }

  close(): Promise<void> {
    this.watchers.length = 0;
    return Promise.resolve();
  }

  private ended(stored: Stored, now: number): boolean {
    return stored.endsAt !== undefined && stored.endsAt <= now;
  }

  private changed(): void {
    for (const watcher of this.watchers) watcher();
  }
}

// A policy name holds no `\n` (names are letters, digits and `_ . - *`), so ids never meet.
function entryId(policy: string, tracker: string | undefined): string {
  return tracker === undefined ? policy : `${policy}\n${tracker}`;
}
