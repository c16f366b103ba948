import { type Clock } from '../stores/store.interface.js';
import { type OverrideEntry, type OverrideSource, type OverrideWrite } from './override-source.js';

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

  set(write: OverrideWrite): Promise<void> {
    const endsAt = write.ttlMs === undefined ? undefined : this.clock() + write.ttlMs;
    this.entries.set(entryId(write.policy, write.tracker), { write, endsAt });
    this.changed();
    return Promise.resolve();
  }

  clear(policy: string, tracker?: string): Promise<boolean> {
    const id = entryId(policy, tracker);
    const stored = this.entries.get(id);
    const had = stored !== undefined && !this.ended(stored, this.clock());
    this.entries.delete(id);
    if (had) this.changed();
    return Promise.resolve(had);
  }

  list(): Promise<OverrideEntry[]> {
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
    return Promise.resolve(listed);
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
