import { type KeyValues, type PolicyArgs } from '../../algorithms/algorithm.js';
import { decide } from '../../algorithms/decide.js';
import { configError } from '../../policy/validation.js';
import { encodeCall, type EncodedCall } from '../call-encoding.js';
import { monotonicClock, toMicros } from '../clock.js';
import { decisionFromReply } from '../decision.js';
import { OperationStore } from '../operation-store.js';
import { type Limits, type StoreCall } from '../../store-contract/store-call.js';
import { type Clock, type RateLimitDecision } from '../../store-contract/store.interface.js';
import { defaultMemoryBudget, entryBytes, MAP_MAX_KEYS } from './memory-size.js';

export interface MemoryStoreOptions {
  /** Time source in milliseconds. For tests; production uses the process's monotonic clock. */
  clock?: Clock;
  /**
   * Most heap the keys may take, in bytes, by the store's estimate of each key (see
   * `memory-size.ts`); past it the least recently written keys are dropped, and with them those
   * clients' counts. Default: a quarter of the process's heap limit.
   */
  maxBytes?: number;
  /** Most keys held, on top of `maxBytes`. Default: no cap but `maxBytes` (and 2^24, a Map's). */
  maxKeys?: number;
}

interface Entry {
  state: unknown;
  /** The twin of the Redis key's TTL: after this the state counts as absent. */
  expiresAtUs: number;
  /** The key's estimated heap bytes when it was written, taken off the total when it goes. */
  bytes: number;
}

// Each decision also inspects this many stored keys for expiry per key it writes, so sweeping
// outpaces key creation and memory stays proportional to the keys in a live window.
const SWEEP_PER_KEY = 3;

/**
 * Keeps rate-limit state in this process, with the same algorithms and answers as the Redis
 * store. Exact for a single instance; use `RedisStore` to share one limit across instances.
 * Expired keys are swept a few at a time as decisions are made: no timers, and memory follows
 * the number of keys in a live window. Beyond that, the store holds at most `maxBytes` of
 * estimated heap (by default a quarter of the heap limit), so a flood of distinct clients
 * cannot exhaust the process: past it, the least recently written keys are dropped.
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new MemoryStore({ maxBytes: 256 * 1024 * 1024 }) });
 * ```
 */
export class MemoryStore extends OperationStore {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly maxBytes: number;
  private readonly maxKeys: number;
  /** Estimated heap bytes of every key held: the sum of their entries' `bytes`. */
  private bytes = 0;
  private sweep: IterableIterator<[string, Entry]> | undefined;
  private evictCursor: IterableIterator<[string, Entry]> | undefined;
  /** The time of the call under way, for `values`. */
  private now = 0;

  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.clock = options.clock ?? monotonicClock;
    this.maxBytes = checkLimit('maxBytes', options.maxBytes) ?? defaultMemoryBudget();
    this.maxKeys = Math.min(checkLimit('maxKeys', options.maxKeys) ?? MAP_MAX_KEYS, MAP_MAX_KEYS);
  }

  /** Decides `call` here, as `decide.lua` would in Redis. */
  execute(call: StoreCall): Promise<RateLimitDecision> {
    const encoded = encodeCall(call);
    // A release or renewal of a decision that took no lease: nothing to do.
    if (encoded === undefined) return Promise.resolve(call.of!);
    return this.decide(call.limits, encoded);
  }

  /** Runs the twin of `decide.lua` over the entries held here. */
  private decide(limits: Limits, encoded: EncodedCall): Promise<RateLimitDecision> {
    const { keys, policies } = limits;
    const costs = encoded.costs ?? limits.costs;
    const { op, at, blockUs } = encoded;
    const now = toMicros(this.clock());
    const args: PolicyArgs[] = new Array(policies.length);
    for (let i = 0; i < args.length; i++) {
      const p = policies[i];
      args[i] = {
        algorithm: p.algorithm,
        periodUs: p.periodUs,
        limit: p.threshold,
        burst: p.burst,
        cost: costs[i],
        blockUs: blockUs ?? p.blockUs,
        bounds: p.calendar?.bounds(now),
      };
    }
    this.now = now;
    const units = encoded.ledgerUnits;
    const ledgers = units?.map((u, i) =>
      u === 0 ? undefined : { key: limits.ledgers![i]!, units: u },
    );
    const reply = decide(op, keys, args, now, this.values, at, ledgers);
    this.sweepExpired(now, SWEEP_PER_KEY * keys.length);
    // On the process's own clock, a booked slot is placed exactly; on a simulated one, not at all.
    const offsetUs = op === 'w' && this.clock === monotonicClock ? 0 : undefined;
    return Promise.resolve(decisionFromReply(reply, policies, offsetUs));
  }

  /** The entries as `decide` sees them: what has expired is absent, as in Redis. */
  private readonly values: KeyValues = {
    get: (key) => {
      const entry = this.entries.get(key);
      return entry !== undefined && entry.expiresAtUs > this.now ? entry.state : undefined;
    },
    set: (key, state, expiresAtUs) => this.write(key, state, expiresAtUs),
    delete: (key) => this.remove(key),
  };

  /**
   * Stores an entry as the most recently used: a Map iterates in insertion order, so
   * re-inserting keeps the least recently written key first, where the bounds evict. The
   * entry's size is estimated from its state's shape, so the total costs nothing to keep.
   */
  private write(key: string, state: unknown, expiresAtUs: number): void {
    const entries = this.entries;
    const bytes = entryBytes(key, state);
    let entry = entries.get(key);
    if (entry !== undefined) {
      this.bytes -= entry.bytes;
      entries.delete(key);
    }
    this.bytes += bytes;
    // Evicts before inserting, so the key being written is never the one dropped.
    while ((this.bytes > this.maxBytes || entries.size >= this.maxKeys) && entries.size > 0) {
      this.evictOldest();
    }
    if (entry === undefined) {
      entry = { state, expiresAtUs, bytes };
    } else {
      entry.state = state;
      entry.expiresAtUs = expiresAtUs;
      entry.bytes = bytes;
    }
    entries.set(key, entry);
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.bytes -= entry.bytes;
    this.entries.delete(key);
  }

  // A fresh iterator would walk past every deleted slot at the head of the Map on each eviction;
  // a live one resumes where it stopped. Keys written since are met again at the end, in order.
  private evictOldest(): void {
    let next = this.evictCursor?.next();
    if (next === undefined || next.done) {
      this.evictCursor = this.entries.entries();
      next = this.evictCursor.next();
    }
    if (next.done) return;
    this.bytes -= next.value[1].bytes;
    this.entries.delete(next.value[0]);
  }

  /** Number of keys currently held, expired ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  /** The heap the keys held take, by the store's estimate; what `maxBytes` bounds. */
  get estimatedBytes(): number {
    return this.bytes;
  }

  override get kind(): string {
    return 'memory';
  }

  override close(): Promise<void> {
    this.entries.clear();
    this.bytes = 0;
    this.sweep = undefined;
    this.evictCursor = undefined;
    return Promise.resolve();
  }

  private sweepExpired(nowUs: number, count: number): void {
    for (let i = 0; i < count; i++) {
      this.sweep ??= this.entries.entries();
      const next = this.sweep.next();
      if (next.done) {
        this.sweep = undefined;
        return;
      }
      const [key, entry] = next.value;
      if (entry.expiresAtUs <= nowUs) {
        this.bytes -= entry.bytes;
        this.entries.delete(key);
      }
    }
  }
}

/** A bound given to the constructor: undefined for the default, else a positive whole number. */
function checkLimit(field: 'maxBytes' | 'maxKeys', value: number | undefined): number | undefined {
  if (value === undefined || (Number.isSafeInteger(value) && value > 0)) return value;
  throw configError('MemoryStore options', field, value, 'a positive integer');
}
