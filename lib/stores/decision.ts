import { type ResolvedPolicy } from '../rate-limit.policy.js';
import { type PolicyDecision, type RateLimitDecision } from './store.interface.js';

/** One policy's answer as the algorithms give it: `retryAfterMs` -1 means never. */
export function policyDecision(
  policy: ResolvedPolicy,
  allowed: boolean,
  remaining: number,
  retryAfterMs: number,
  resetAfterMs: number,
): PolicyDecision {
  return {
    policy,
    allowed,
    limit: policy.threshold,
    remaining,
    resetAfterMs,
    retryAfterMs: retryAfterMs < 0 ? Infinity : retryAfterMs,
  };
}

/** Folds the policies' answers into one decision; see {@link RateLimitDecision}. */
export function combineDecisions(allowed: boolean, policies: PolicyDecision[]): RateLimitDecision {
  let binding = policies[0];
  let retryAfterMs = 0;
  for (const decision of policies) {
    if (decision.remaining < binding.remaining) binding = decision;
    if (!allowed && !decision.allowed && decision.retryAfterMs > retryAfterMs) {
      retryAfterMs = decision.retryAfterMs;
    }
  }
  return {
    allowed,
    limit: binding.limit,
    remaining: binding.remaining,
    resetAfterMs: binding.resetAfterMs,
    retryAfterMs,
    policies,
  };
}
