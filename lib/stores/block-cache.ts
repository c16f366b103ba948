import { type ResolvedPolicy } from '../rate-limit.policy.js';
import { monotonicClock } from './clock.js';
import { type Clock, type RateLimitDecision, type RateLimitStore } from './store.interface.js';

interface Block {
  /** Local time (ms) until which the same request is certainly rejected. */
  until: number;
  policies: readonly ResolvedPolicy[];
  costs: readonly number[];
  decision: RateLimitDecision;
  decidedAt: number;
}

/** Most keys blocked at once; past it the oldest blocks are forgotten (they only cost a call). */
export const DEFAULT_BLOCK_CACHE_SIZE = 10_000;

/**
 * Answers a rejected key locally until its retry time, so a flood from one client costs Redis
 * one call per retry window instead of one per request.
 *
 * It can never change a decision the store would make: a rejection writes nothing in any of the
 * algorithms, and a request that did not fit keeps not fitting, whatever else happens, until its
 * retry time (other traffic only adds). With several policies the block lasts until the first
 * rejecting policy's wait is over, so each policy's own answer stays the store's too. The block is measured from when the rejected request was
 * sent, never from when its answer arrived, and ends a millisecond early to absorb the rounding of
 * the retry time up to whole milliseconds. Only a request of the same cost under the same limits
 * is answered from the block.
 */
export class BlockCacheStore implements RateLimitStore {
  private readonly blocks = new Map<string, Block>();
  private readonly clock: Clock;
  private readonly maxSize: number;

  constructor(
    readonly inner: RateLimitStore,
    options: { clock?: Clock; maxSize?: number } = {},
  ) {
    this.clock = options.clock ?? monotonicClock;
    this.maxSize = options.maxSize ?? DEFAULT_BLOCK_CACHE_SIZE;
  }

  async consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    const id = keys.length === 1 ? keys[0] : keys.join('\n');
    const sentAt = this.clock();
    const block = this.blocks.get(id);
    if (block !== undefined) {
      if (sentAt < block.until && covers(block, policies, costs)) return replay(block, sentAt);
      if (sentAt >= block.until) this.blocks.delete(id);
    }

    const decision = await this.inner.consume(keys, policies, costs);
    // A request let through under other limits (or costs) adds to the key: the block's wait
    // would understate the new one, so drop it and let the next rejection set it anew.
    if (decision.allowed) {
      if (block !== undefined) this.blocks.delete(id);
      return decision;
    }
    // Only finite waits from the store itself: a degraded answer says nothing about the limit.
    if (decision.degraded === undefined && Number.isFinite(decision.retryAfterMs)) {
      const until = sentAt + shortestWait(decision) - 1;
      if (until > sentAt)
        this.remember(id, { until, policies, costs, decision, decidedAt: sentAt });
    }
    return decision;
  }

  /** Keys currently blocked locally, expired ones not yet dropped included. */
  get size(): number {
    return this.blocks.size;
  }

  close(): Promise<void> {
    this.blocks.clear();
    return this.inner.close?.() ?? Promise.resolve();
  }

  private remember(id: string, block: Block): void {
    this.blocks.delete(id);
    if (this.blocks.size >= this.maxSize) {
      const oldest = this.blocks.keys().next();
      if (!oldest.done) this.blocks.delete(oldest.value);
    }
    this.blocks.set(id, block);
  }
}

/**
 * Whether the block answers this request: the same limits (a per-request threshold may have
 * grown) and the same costs (a smaller request might fit; a larger one is rejected too, but with
 * another wait, which only the store can tell).
 */
function covers(
  block: Block,
  policies: readonly ResolvedPolicy[],
  costs: readonly number[],
): boolean {
  for (let i = 0; i < costs.length; i++) {
    const [was, now] = [block.policies[i], policies[i]];
    if (costs[i] !== block.costs[i]) return false;
    if (was === now) continue;
    if (
      was.algorithm !== now.algorithm ||
      was.threshold !== now.threshold ||
      was.periodUs !== now.periodUs ||
      was.burst !== now.burst
    ) {
      return false;
    }
  }
  return true;
}

/**
 * Until the first rejecting policy's wait is over: by then the request is still rejected, but that
 * policy's own answer changes, and only the store can give the new one.
 */
function shortestWait(decision: RateLimitDecision): number {
  let wait = decision.retryAfterMs;
  for (const p of decision.policies) if (!p.allowed && p.retryAfterMs < wait) wait = p.retryAfterMs;
  return wait;
}

/** The stored rejection, with its waits shortened by the time that has passed. */
function replay(block: Block, now: number): RateLimitDecision {
  const elapsed = Math.floor(now - block.decidedAt);
  const shorten = (ms: number) => Math.max(1, ms - elapsed);
  const { decision } = block;
  return {
    ...decision,
    retryAfterMs: shorten(decision.retryAfterMs),
    resetAfterMs: shorten(decision.resetAfterMs),
    policies: decision.policies.map((p) => ({
      ...p,
      retryAfterMs: p.allowed ? 0 : shorten(p.retryAfterMs),
      resetAfterMs: shorten(p.resetAfterMs),
    })),
  };
}
