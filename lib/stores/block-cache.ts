import { type Block, covers, leasesFull, replay, shortestWait } from './block-replay.js';
import { monotonicClock } from './clock.js';
import { outcomesPendingOf, preciseWaitOf } from './decision.js';
import { ForwardingStore } from './forwarding-store.js';
import { type CallStore, type StoreCall } from '../store-contract/store-call.js';
import { type Clock, type RateLimitDecision } from '../store-contract/store.interface.js';
import { NO_TELEMETRY, type RateLimitTelemetry } from '../telemetry/rate-limit-telemetry.js';
import { isStoreFailure } from './resilience/store-failure.js';

/** What this instance knows of a key the store has rejected. */
interface HotKey {
  block: Block | undefined;
  /** Store calls under way for the key. */
  inFlight: number;
  /** How many calls may be under way at once: 1 after a rejection, `remaining + 1` after a pass. */
  permits: number;
  /** Requests waiting for a call under way to settle; told whether the store failed. */
  waiters: Array<(storeFailed: boolean) => void>;
}

export interface BlockCacheOptions {
  clock?: Clock;
  maxSize?: number;
  /** Told of each request answered from a block. */
  telemetry?: RateLimitTelemetry;
}

/** Most keys tracked at once; past it the oldest are forgotten (they only cost calls). */
export const DEFAULT_BLOCK_CACHE_SIZE = 10_000;
/**
 * Longest a block is answered locally before the store is asked again. Another instance may
 * refund or reset the key meanwhile; this bounds how long this one can miss that.
 */
export const MAX_LOCAL_BLOCK_MS = 1000;

/**
 * Answers a rejected key locally until its retry time, so a flood from one client costs Redis
 * about one call per retry window instead of one per request.
 *
 * It can never change a decision the store would make: a rejection writes nothing in any of the
 * algorithms, and a request that did not fit keeps not fitting, whatever else happens, until its
 * retry time (other traffic only adds). With several policies the block lasts until the first
 * rejecting policy's wait is over, so each policy's own answer stays the store's too. The block is
 * measured from when the rejected request was sent, never from when its answer arrived, and lasts
 * the store's exact wait (µs) less a microsecond, or else the rounded-up retry time less a
 * millisecond. Only a request of the same cost under the same limits is answered from the block.
 *
 * Concurrent requests of a rejected key are grouped: once a block ends, one call asks the store
 * while the others wait for its answer. If it is a rejection, they are answered from the new
 * block; if the request passed, `remaining + 1` more may go (any beyond that would be rejected).
 * Keys that were never rejected are never held back.
 */
export class BlockCacheStore extends ForwardingStore {
  private readonly hot = new Map<string, HotKey>();
  private readonly clock: Clock;
  private readonly maxSize: number;
  private readonly telemetry: RateLimitTelemetry;

  constructor(inner: CallStore, options: BlockCacheOptions = {}) {
    super(inner);
    this.clock = options.clock ?? monotonicClock;
    this.maxSize = options.maxSize ?? DEFAULT_BLOCK_CACHE_SIZE;
    this.telemetry = options.telemetry ?? NO_TELEMETRY;
  }

  /**
   * Answers a consume from a local block when one covers it. A refund, reset or release, or a
   * settlement that gives something back, forgets any local block of the keys at once; every
   * other call, a reservation included, goes to the store as it is (a block placed there is
   * learnt from the store, once per request). A settlement's charge only adds, so a block stands;
   * and nothing allowed is ever answered here, so no answer of the cache goes stale with it.
   * Limits to be answered without the store pass as they are: their keys may be stand-ins.
   */
  override execute(call: StoreCall): Promise<RateLimitDecision> {
    const { op } = call;
    if (op === 'consume' && call.limits.answerWithout === undefined) {
      return this.consumeCached(call);
    }
    if (op === 'refund' || op === 'reset' || op === 'release' || givesBack(call)) {
      this.unblock(call.limits.keys);
    }
    return super.execute(call);
  }

  /** Keys currently tracked, expired blocks not yet dropped included. */
  get size(): number {
    return this.hot.size;
  }

  override close(): Promise<void> {
    this.hot.clear();
    return super.close();
  }

  private async consumeCached(call: StoreCall): Promise<RateLimitDecision> {
    const { keys } = call.limits;
    const id = keys.length === 1 ? keys[0] : keys.join('\n');
    const hot = this.hot.get(id);
    if (hot === undefined) return this.ask(id, undefined, call);
    for (;;) {
      const now = this.clock();
      const { block } = hot;
      if (block !== undefined) {
        if (now < block.until && covers(block, call.limits)) {
          this.telemetry.blockCacheAnswered(call.limits.policies);
          return replay(block, now);
        }
        if (now >= block.until) hot.block = undefined;
      }
      // Forgotten or replaced while this request waited: start over with what is known now.
      if (this.hot.get(id) !== hot) return this.consumeCached(call);
      if (hot.inFlight < hot.permits) return this.ask(id, hot, call);
      const storeFailed = await new Promise<boolean>((resolve) => hot.waiters.push(resolve));
      // The store failed the call this one waited on: marked, so that the resilient store below
      // answers it as `onStoreError` says without asking the store again.
      if (storeFailed) return this.inner.execute({ ...call, failedMeanwhile: true });
    }
  }

  /**
   * Drops the local block of a key set, and of each key alone (a route's keys are blocked as a
   * set, a service key may be blocked alone): the next request asks the store.
   */
  private unblock(keys: readonly string[]): void {
    const ids = keys.length === 1 ? keys : [keys.join('\n'), ...keys];
    for (const id of ids) {
      const hot = this.hot.get(id);
      if (hot !== undefined) this.forget(id, hot, false);
    }
  }

  private async ask(
    id: string,
    hot: HotKey | undefined,
    call: StoreCall,
  ): Promise<RateLimitDecision> {
    const sentAt = this.clock();
    if (hot !== undefined) hot.inFlight++;
    let decision: RateLimitDecision;
    try {
      decision = await this.inner.execute(call);
    } catch (error) {
      // The calls waiting on this one get `onStoreError` only when the store failed; after an
      // error of this call's own, each asks for itself.
      if (hot !== undefined) this.forget(id, hot, isStoreFailure(error));
      throw error;
    }
    if (hot !== undefined) hot.inFlight--;

    if (decision.degraded !== undefined) {
      // A degraded answer says nothing about the limit, and the store is failing: stop waiting.
      if (hot !== undefined) this.forget(id, hot, true);
    } else if (decision.allowed) {
      if (hot !== undefined) this.passed(id, hot, decision.remaining);
    } else {
      this.rejected(id, hot, { until: 0, limits: call.limits, decision, decidedAt: sentAt });
    }
    return decision;
  }

  /** A request got through: the block is over, and `remaining + 1` calls may go at once. */
  private passed(id: string, hot: HotKey, remaining: number): void {
    hot.block = undefined;
    hot.permits = Math.max(1, remaining + 1);
    // A request that took the last of the quota is most likely followed by a rejection: keep
    // grouping the key's requests, or a flood sends a whole burst to the store each time a slot
    // frees up (the size bound still applies).
    if (hot.inFlight === 0 && hot.waiters.length === 0 && remaining > 0) {
      if (this.hot.get(id) === hot) this.hot.delete(id);
    } else {
      wake(hot, false);
    }
  }

  private rejected(id: string, hot: HotKey | undefined, block: Block): void {
    // Only finite waits: a cost that can never fit is answered by the store each time. A full
    // concurrency limit promises no wait at all: any holder may release at any moment; nor do
    // requests in flight that fill a policy counting some outcomes: any may end at any moment.
    const promisesNoWait =
      leasesFull(block.decision) || block.decision.policies.some(outcomesPendingOf);
    if (Number.isFinite(block.decision.retryAfterMs) && !promisesNoWait) {
      block.until = block.decidedAt + Math.min(holdFor(block.decision), MAX_LOCAL_BLOCK_MS);
      if (block.until > block.decidedAt) {
        const entry = hot ?? this.remember(id);
        // Answers may arrive out of order; keep the block that lasts longer.
        if (entry.block === undefined || entry.block.until < block.until) entry.block = block;
        entry.permits = 1;
      }
    }
    const entry = hot ?? this.hot.get(id);
    if (entry !== undefined) wake(entry, false);
  }

  private forget(id: string, hot: HotKey, storeFailed: boolean): void {
    if (this.hot.get(id) === hot) this.hot.delete(id);
    wake(hot, storeFailed);
  }

  private remember(id: string): HotKey {
    const existing = this.hot.get(id);
    if (existing !== undefined) return existing;
    if (this.hot.size >= this.maxSize) {
      const oldest = this.hot.keys().next();
      if (!oldest.done) this.hot.delete(oldest.value);
    }
    const hot: HotKey = { block: undefined, inFlight: 0, permits: 1, waiters: [] };
    this.hot.set(id, hot);
    return hot;
  }
}

// The stores round a wait up to the microsecond, and the buckets count tokens in floating point:
// a wait may come out a microsecond longer than the one the store will act on.
const PRECISE_WAIT_ROUNDING_MS = 0.001;

/**
 * How long after sending the request its rejection certainly stands: the store's exact wait when
 * it gives one (it counts from when it decided, which is after the request was sent), less the
 * microsecond its rounding may have added, else the rounded-up wait less the 1 ms the rounding to
 * the millisecond may have added.
 */
function holdFor(decision: RateLimitDecision): number {
  const precise = preciseWaitOf(decision);
  return precise === undefined ? shortestWait(decision) - 1 : precise - PRECISE_WAIT_ROUNDING_MS;
}

/** Whether `call` settles a reservation for less than its estimate under some policy. */
function givesBack(call: StoreCall): boolean {
  return call.op === 'settle' && call.limits.costs.some((delta) => delta < 0);
}

function wake(hot: HotKey, storeFailed: boolean): void {
  if (hot.waiters.length === 0) return;
  const waiters = hot.waiters;
  hot.waiters = [];
  for (const resume of waiters) resume(storeFailed);
}
