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

/**
 * The decision a script reply (or its memory twin's) stands for: `{ allowed, then allowed,
 * remaining, retry_after_ms, reset_after_ms per policy, … }`.
 */
export function decisionFromReply(
  reply: readonly number[],
  policies: readonly ResolvedPolicy[],
): RateLimitDecision {
  const answers: PolicyDecision[] = new Array(policies.length);
  for (let i = 0, r = 1; i < policies.length; i++, r += 4) {
    answers[i] = policyDecision(
      policies[i],
      reply[r] === 1,
      reply[r + 1],
      reply[r + 2],
      reply[r + 3],
    );
  }
  return combineDecisions(reply[0] === 1, answers);
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
