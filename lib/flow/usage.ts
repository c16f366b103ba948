import { configError, MAX_THRESHOLD } from '../policy/validation.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

/*
 * What a call used, once it is known: checked, and charged in place of the estimate it was
 * counted at. A reservation of the service and a route policy with `settle` both settle so.
 */

/**
 * Charges `actual` in place of what `decision` counted under each policy (`limits.costs`): one
 * store call with the signed differences, none when they are all 0.
 */
export function settleUsage(
  store: CallStore,
  limits: Limits,
  decision: RateLimitDecision,
  actual: number | readonly (number | undefined)[],
): Promise<RateLimitDecision> {
  const { keys, policies, costs } = limits;
  let any = false;
  const deltas = costs.map((cost, i) => {
    const used = typeof actual === 'number' ? actual : actual[i];
    const delta = used === undefined ? 0 : used - cost;
    any ||= delta !== 0;
    return delta;
  });
  if (!any) return Promise.resolve(decision);
  return store.execute({ op: 'settle', limits: { keys, policies, costs: deltas }, of: decision });
}

/** What a call used: an integer from 0, at most what a policy's threshold may be. */
export function checkUsage(value: unknown, field: string, where: string): number {
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 0 ||
    value > MAX_THRESHOLD
  ) {
    throw configError(where, field, value, `an integer from 0 to ${MAX_THRESHOLD}`);
  }
  return value;
}
