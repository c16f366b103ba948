import { combineDecisions, policyDecision } from '../stores/decision.js';
import { OperationStore } from '../stores/operation-store.js';
import { type StoreCall } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

/**
 * A store under which every limit is off: each call, whatever it asks, is allowed, and every
 * policy has its whole quota left (`remaining` is its threshold, nothing waits and nothing is
 * counted). So the headers a route sends stay those of a fresh client.
 */
export class AllowAllStore extends OperationStore {
  execute({ limits }: StoreCall): Promise<RateLimitDecision> {
    const answers = limits.policies.map((policy) =>
      policyDecision(policy, true, policy.threshold, 0, 0),
    );
    return Promise.resolve(combineDecisions(true, answers));
  }
}
