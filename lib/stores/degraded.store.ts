import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { degradedDecision } from './decision.js';
import {
  invoke,
  type OperationExtras,
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorPolicy,
  type StoreOperation,
} from './store.interface.js';

/** A request turned away while nothing can decide it tells the client to come back after this long. */
export const DENY_RETRY_MS = 1000;

/**
 * A store that answers every call as one `onStoreError` value says, without the primary store:
 * `'memory'` asks the instance's memory store and marks its decisions, `'allow'` and `'deny'`
 * answer at once and record nothing. Giving back or freeing what such an answer took goes to
 * the memory store under `'memory'`, and is nothing to do otherwise.
 */
export class DegradedStore implements RateLimitStore {
  constructor(
    readonly answer: StoreErrorPolicy,
    private readonly memory: RateLimitStore,
  ) {}

  consume(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
  ): Promise<RateLimitDecision> {
    return this.call('consume', keys, policies, costs);
  }

  reserve(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    maxWaitMs: number,
  ): Promise<RateLimitDecision> {
    return this.call('reserve', keys, policies, costs, { maxWaitMs });
  }

  refund(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of?: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.undo('refund', keys, policies, costs, of);
  }

  release(
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision,
  ): Promise<RateLimitDecision> {
    return this.undo('release', keys, policies, costs, of);
  }

  private async call(
    op: StoreOperation,
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    extras?: OperationExtras,
  ): Promise<RateLimitDecision> {
    if (this.answer === 'memory') {
      const decided = await invoke(this.memory, op, keys, policies, costs, extras);
      return degradedDecision(decided, 'memory');
    }
    return fixedAnswer(policies, this.answer);
  }

  private undo(
    op: 'refund' | 'release',
    keys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    of: RateLimitDecision | undefined,
  ): Promise<RateLimitDecision> {
    if (of?.degraded === 'memory') return invoke(this.memory, op, keys, policies, costs, { of });
    // `'allow'` and `'deny'` counted nothing and took no lease.
    return Promise.resolve(of ?? fixedAnswer(policies, 'allow'));
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
