import { type ResolvedPolicy } from '../../policy/rate-limit.policy.js';
import { degradedDecision } from '../decision.js';
import { OperationStore } from '../operation-store.js';
import { execute, type StoreCall } from '../../store-contract/store-call.js';
import {
  type RateLimitDecision,
  type RateLimitStore,
  type StoreErrorPolicy,
} from '../../store-contract/store.interface.js';

/** A request turned away while nothing can decide it tells the client to come back after this long. */
export const DENY_RETRY_MS = 1000;

// How strict each answer is: on a call with several policies, the strictest one's answer wins.
const STRICTNESS: Readonly<Record<StoreErrorPolicy, number>> = { allow: 0, memory: 1, deny: 2 };

/**
 * What answers a call while the store fails: each policy's own `onStoreError`, or `moduleAnswer`
 * for a policy without one, and of those the strictest: any `'deny'` denies, else any `'memory'`
 * lets the memory store decide (every policy of the call), else `'allow'`. Runs only on a failed
 * call; without overrides it is one loop over the policies that changes nothing.
 */
export function answerFor(
  policies: readonly ResolvedPolicy[],
  moduleAnswer: StoreErrorPolicy,
): StoreErrorPolicy {
  let answer: StoreErrorPolicy | undefined;
  let moduleAsked = false;
  for (const { onStoreError: own } of policies) {
    if (own === undefined) moduleAsked = true;
    else if (answer === undefined || STRICTNESS[own] > STRICTNESS[answer]) answer = own;
  }
  if (answer === undefined) return moduleAnswer;
  return moduleAsked && STRICTNESS[moduleAnswer] > STRICTNESS[answer] ? moduleAnswer : answer;
}

/**
 * Answers `call` as `answer` says, without the primary store: `'memory'` asks the instance's
 * memory store and marks its decision, `'allow'` and `'deny'` answer at once and record nothing.
 */
export async function answerWithout(
  call: StoreCall,
  answer: StoreErrorPolicy,
  memory: RateLimitStore,
  denyRetryMs = DENY_RETRY_MS,
): Promise<RateLimitDecision> {
  if (answer === 'memory') return degradedDecision(await execute(memory, call), 'memory');
  return fixedAnswer(call.limits.policies, answer, denyRetryMs);
}

/**
 * A store that answers every call as one `onStoreError` value says, without the primary store,
 * save for the policies that have their own (see {@link answerFor}): `'memory'` asks the
 * instance's memory store and marks its decisions, `'allow'` and `'deny'` answer at once and
 * record nothing. Giving back, settling, freeing or renewing what such an answer took goes to the
 * memory store under `'memory'`, and is nothing to do otherwise.
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
    if (op !== 'refund' && op !== 'settle' && op !== 'release' && op !== 'renew') {
      return this.decide(call);
    }
    if (of?.degraded === 'memory') return execute(this.memory, call);
    // `'allow'` and `'deny'` counted nothing and took no lease.
    return Promise.resolve(of ?? fixedAnswer(call.limits.policies, 'allow'));
  }

  private decide(call: StoreCall): Promise<RateLimitDecision> {
    return answerWithout(call, answerFor(call.limits.policies, this.answer), this.memory);
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
