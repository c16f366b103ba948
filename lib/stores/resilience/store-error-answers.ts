import { type ResolvedPolicy } from '../../policy/rate-limit.policy.js';
import { degradedDecision } from '../decision.js';
import {
  type CallStore,
  type StoreCall,
  type StoreOperation,
} from '../../store-contract/store-call.js';
import {
  type RateLimitDecision,
  type StoreErrorHandler,
  type StoreErrorPolicy,
} from '../../store-contract/store.interface.js';
import { isError } from '../errors.js';

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
 * What `onStoreError` answers for `error`: the value itself, or what a handler picks. A handler
 * that returns nothing gets `'memory'`; one that throws or returns anything but `'memory'`,
 * `'allow'` or `'deny'` gets `'memory'` too, and `problem` is told what it did.
 */
export function chooseAnswer(
  onStoreError: StoreErrorPolicy | StoreErrorHandler,
  error: unknown,
  problem: (what: string) => void = () => {},
): StoreErrorPolicy {
  if (typeof onStoreError !== 'function') return onStoreError;
  try {
    const chosen = onStoreError(isError(error) ? error : new Error(String(error)));
    if (chosen === undefined) return 'memory';
    if (chosen === 'memory' || chosen === 'allow' || chosen === 'deny') return chosen;
    problem(`onStoreError returned ${String(chosen)}, not 'memory', 'allow' or 'deny'`);
  } catch (hookError) {
    problem(`onStoreError threw: ${isError(hookError) ? hookError.message : String(hookError)}`);
  }
  return 'memory';
}

/**
 * Answers `call` as `answer` says, without the primary store: `'memory'` asks the instance's
 * memory store and marks its decision, `'allow'` and `'deny'` answer at once and record nothing.
 */
export async function answerWithout(
  call: StoreCall,
  answer: StoreErrorPolicy,
  memory: CallStore,
  denyRetryMs = DENY_RETRY_MS,
): Promise<RateLimitDecision> {
  if (answer === 'memory') return degradedDecision(await memory.execute(call), 'memory');
  return fixedAnswer(call.limits.policies, answer, denyRetryMs);
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

/** The operations on a request decided before, which go where that request was counted. */
export function followsItsRequest(op: StoreOperation): boolean {
  return op === 'refund' || op === 'settle' || op === 'release' || op === 'renew';
}
