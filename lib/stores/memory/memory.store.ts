import { SlidingWindowLog } from '../../algorithms/sliding-window.js';
import { type ResolvedPolicy } from '../../rate-limit.policy.js';
import { monotonicClock, toMicros } from '../clock.js';
import { type Clock, type RateLimitDecision, type RateLimitStore } from '../store.interface.js';

export interface MemoryStoreOptions {
  /** Time source in milliseconds. For tests; production uses the process's monotonic clock. */
  clock?: Clock;
}

// Each decision also inspects this many stored keys for expiry. More than one per decision,
// so sweeping outpaces key creation and memory stays proportional to the live keys.
const SWEEP_STEP = 2;

/**
 * Keeps rate-limit state in this process. Exact for a single instance; use `RedisStore` to share
 * one limit across instances. Expired keys are swept a few at a time as decisions are made,
 * so there are no timers and memory follows the number of keys in a live window.
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new MemoryStore() });
 * ```
 */
export class MemoryStore implements RateLimitStore {
  private readonly logs = new Map<string, SlidingWindowLog>();
  private readonly clock: Clock;
  private sweep: IterableIterator<[string, SlidingWindowLog]> | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.clock = options.clock ?? monotonicClock;
  }

  consume(key: string, policy: ResolvedPolicy, cost: number): Promise<RateLimitDecision> {
    const now = toMicros(this.clock());
    let log = this.logs.get(key);
    if (log === undefined) {
      log = new SlidingWindowLog();
      this.logs.set(key, log);
    }
    const decision = log.consume(now, policy.periodUs, policy.threshold, cost);
    // Redis deletes a sorted set once its last member goes; do the same.
    if (log.size === 0) this.logs.delete(key);
    this.sweepExpired(now);
    return Promise.resolve(decision);
  }

  /** Number of keys currently held. */
  get size(): number {
    return this.logs.size;
  }

  close(): Promise<void> {
    this.logs.clear();
    this.sweep = undefined;
    return Promise.resolve();
  }

  private sweepExpired(nowUs: number): void {
    for (let i = 0; i < SWEEP_STEP; i++) {
      this.sweep ??= this.logs.entries();
      const next = this.sweep.next();
      if (next.done) {
        this.sweep = undefined;
        return;
      }
      const [key, log] = next.value;
      if (log.expiresAtUs <= nowUs) this.logs.delete(key);
    }
  }
}
