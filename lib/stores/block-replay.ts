import { algorithmOf } from '../algorithms/registry.js';
import { type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

/** A rejection the block cache answers locally until `until`. */
export interface Block {
  /** Local time (ms) until which the same request is certainly rejected. */
  until: number;
  /** The limits of the rejected request; its keys are the block's. */
  limits: Limits;
  decision: RateLimitDecision;
  decidedAt: number;
}

/**
 * Whether the block answers this request: the same limits (a per-request threshold may have
 * grown) and the same costs (a smaller request might fit; a larger one is rejected too, but with
 * another wait, which only the store can tell).
 */
export function covers(block: Block, limits: Limits): boolean {
  const { policies, costs } = limits;
  for (let i = 0; i < costs.length; i++) {
    const [was, now] = [block.limits.policies[i], policies[i]];
    if (costs[i] !== block.limits.costs[i]) return false;
    if (was === now) continue;
    if (
      was.algorithm !== now.algorithm ||
      was.threshold !== now.threshold ||
      was.periodUs !== now.periodUs ||
      was.burst !== now.burst ||
      was.calendar !== now.calendar
    ) {
      return false;
    }
  }
  return true;
}

/**
 * Whether a policy that holds leases took part in the rejection: a release may make room at any
 * moment, so its wait promises nothing.
 */
export function leasesFull(decision: RateLimitDecision): boolean {
  for (const p of decision.policies)
    if (!p.allowed && algorithmOf(p.policy.algorithm).holdsLeases) return true;
  return false;
}

/**
 * Until the first rejecting policy's wait is over: by then the request is still rejected, but that
 * policy's own answer changes, and only the store can give the new one.
 */
export function shortestWait(decision: RateLimitDecision): number {
  let wait = decision.retryAfterMs;
  for (const p of decision.policies) if (!p.allowed && p.retryAfterMs < wait) wait = p.retryAfterMs;
  return wait;
}

/** The stored rejection, with its waits shortened by the time that has passed. */
export function replay(block: Block, now: number): RateLimitDecision {
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
