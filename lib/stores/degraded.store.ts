import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { degradedDecision } from './decision.js';
import { OperationStore } from './operation-store.js';
import { execute, type StoreCall } from './store-call.js';
import {
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorPolicy,
} from './store.interface.js';

/** A request turned away while nothing can decide it tells the client to come back after this long. */
export const DENY_RETRY_MS = 1000;

/**
 * A store that answers every call as one `onStoreError` value says, without the primary store:
 * `'memory'` asks the instance's memory store and marks its decisions, `'allow'` and `'deny'`
 * answer at once and record nothing. Giving back, freeing or renewing what such an answer took
 * goes to the memory store under `'memory'`, and is nothing to do otherwise.
 */
export class DegradedStore extends OperationStore {
  constructor(
    readonly answer: StoreErrorPolicy,
    private readonly memory: RateLimitStore,
  ) {
    super();
  }

  execute(call: StoreCall): Promise<RateLimitDecision> {
    const { op, of } = call;
    if (op !== 'refund' && op !== 'release' && op !== 'renew') return this.decide(call);
    if (of?.degraded === 'memory') return execute(this.memory, call);
    // `'allow'` and `'deny'` counted nothing and took no lease.
    return Promise.resolve(of ?? fixedAnswer(call.limits.policies, 'allow'));
  }

  private async decide(call: StoreCall): Promise<RateLimitDecision> {
    if (this.answer === 'memory') {
      const decided = await execute(this.memory, call);
      return degradedDecision(decided, 'memory');
    }
    return fixedAnswer(call.limits.policies, this.answer);
  }
}

/**
 * What `'allow'` or `'deny'` answer, recording nothing: every policy allows, or every one rejects
 * for `denyRetryMs`.
 */
export function fixedAnswer(
  policies: readonly ResolvedPolicy[],
  answer: 'allow' | 'deny',
  denyRetryMs = DENY_RETRY_MS,
): RateLimitDecision {
  const allowed = answer === 'allow';
  const answers = policies.map((p) => ({
    policy: p,
    allowed,
    limit: p.threshold,
    remaining: allowed ? p.threshold : 0,
    resetAfterMs: 0,
    retryAfterMs: allowed ? 0 : denyRetryMs,
  }));
  return { ...answers[0], policies: answers, degraded: answer };
}
