import { type Outcome, type Params } from '../../algorithms/algorithm.js';
import { TWINS } from '../../algorithms/index.js';
import { type ResolvedPolicy } from '../../rate-limit.policy.js';
import { monotonicClock, toMicros } from '../clock.js';
import { combineDecisions, policyDecision } from '../decision.js';
import {
  type Clock,
  type PolicyDecision,
  type RateLimitDecision,
  type RateLimitStore,
  type StoreOperation,
} from '../store.interface.js';

export interface MemoryStoreOptions {
  /** Time source in milliseconds. For tests; production uses the process's monotonic clock. */
  clock?: Clock;
  /**
   * Most keys held; past it the least recently written key is dropped, and with it that
   * client's count. Default 1,000,000.
   */
  maxKeys?: number;
}

interface Entry {
  state: unknown;
  /** The twin of the Redis key's TTL: after this the state counts as absent. */
  expiresAtUs: number;
}

// Each decision also inspects this many stored keys for expiry per key it writes, so sweeping
// outpaces key creation and memory stays proportional to the keys in a live window.
const SWEEP_PER_KEY = 3;

/**
 * Keeps rate-limit state in this process, with the same algorithms and answers as the Redis
 * store. Exact for a single instance; use `RedisStore` to share one limit across instances.
 * Expired keys are swept a few at a time as decisions are made: no timers, and memory follows
 * the number of keys in a live window.
 *
 * @example
 * ```ts
 * RateLimitModule.forRoot({ store: new MemoryStore() });
 * ```
 */
export class MemoryStore implements RateLimitStore {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;
  private readonly maxKeys: number;
  private sweep: IterableIterator<[string, Entry]> | undefined;
  private evictCursor: IterableIterator<string> | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    this.clock = options.clock ?? monotonicClock;
    this.maxKeys = options.maxKeys ?? 1_000_000;
  }

  consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return Promise.resolve(this.decide('consume', keys, policies, costs));
  }

  peek(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return Promise.resolve(this.decide('peek', keys, policies, costs));
  }

  refund(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return Promise.resolve(this.decide('refund', keys, policies, costs));
  }

  reset(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return Promise.resolve(this.decide('reset', keys, policies, costs));
  }

  /** The twin of `decide.lua`, step for step. */
  private decide(
    op: StoreOperation,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): RateLimitDecision {
    const now = toMicros(this.clock());
    const n = keys.length;
    const params: Params[] = new Array(n);
    for (let i = 0; i < n; i++) {
      params[i] = toParams(policies[i], costs[i]);
      if (op === 'reset') this.entries.delete(keys[i]);
      else if (op === 'refund') this.refundOne(keys[i], policies[i], now, params[i]);
      // What is left afterwards is what a request of no cost would see.
      if (op === 'reset' || op === 'refund') params[i] = toParams(policies[i], 0);
    }

    const states: unknown[] = new Array(n);
    const verdicts = new Array(n);
    let allowed = true;
    for (let i = 0; i < n; i++) {
      const entry = this.entries.get(keys[i]);
      states[i] = entry !== undefined && entry.expiresAtUs > now ? entry.state : undefined;
      verdicts[i] = TWINS[policies[i].algorithm].check(states[i], now, params[i]);
      if (!verdicts[i].allowed) allowed = false;
    }

    const answers: PolicyDecision[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const twin = TWINS[policies[i].algorithm];
      const { work, retryAfterMs } = verdicts[i];
      let outcome: Outcome;
      if (!allowed || op === 'refund' || op === 'reset') {
        outcome = twin.status(states[i], now, params[i], work);
      } else if (op === 'consume') {
        const done = twin.commit(states[i], now, params[i], work);
        this.write(keys[i], done.state, done.expiresAtUs);
        outcome = done;
      } else {
        outcome = twin.after(now, params[i], work);
      }
      answers[i] = policyDecision(
        policies[i],
        verdicts[i].allowed,
        outcome.remaining,
        allowed ? 0 : retryAfterMs,
        outcome.resetAfterMs,
      );
    }
    this.sweepExpired(now, SWEEP_PER_KEY * n);
    return combineDecisions(allowed, answers);
  }

  private refundOne(key: string, policy: ResolvedPolicy, now: number, p: Params): void {
    const entry = this.entries.get(key);
    const state = entry !== undefined && entry.expiresAtUs > now ? entry.state : undefined;
    const left = TWINS[policy.algorithm].refund(state, now, p);
    if (left === undefined) this.entries.delete(key);
    else this.write(key, left.state, left.expiresAtUs);
  }

  /**
   * Stores an entry as the most recently used: a Map iterates in insertion order, so
   * re-inserting keeps the least recently written key first, where the bound evicts.
   */
  private write(key: string, state: unknown, expiresAtUs: number): void {
    const entries = this.entries;
    if (!entries.delete(key) && entries.size >= this.maxKeys) this.evictOldest();
    entries.set(key, { state, expiresAtUs });
  }

  // A fresh iterator would walk past every deleted slot at the head of the Map on each eviction;
  // a live one resumes where it stopped. Keys written since are met again at the end, in order.
  private evictOldest(): void {
    let next = this.evictCursor?.next();
    if (next === undefined || next.done) {
      this.evictCursor = this.entries.keys();
      next = this.evictCursor.next();
    }
    if (!next.done) this.entries.delete(next.value);
  }

  /** Number of keys currently held, expired ones not yet swept included. */
  get size(): number {
    return this.entries.size;
  }

  close(): Promise<void> {
    this.entries.clear();
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
      if (entry.expiresAtUs <= nowUs) this.entries.delete(key);
    }
  }
}

function toParams(policy: ResolvedPolicy, cost: number): Params {
  return { periodUs: policy.periodUs, limit: policy.threshold, burst: policy.burst, cost };
}
