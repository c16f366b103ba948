import { configError } from '../policy/validation.js';
import { checkUsage, settleUsage } from '../flow/usage.js';
import { type CallStore, type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';

/**
 * What `RateLimitService.reserve` resolves with: the decision that took the estimate, plus how
 * to settle it once the call's real usage is known. Settle it, or cancel it, once; a reservation
 * never settled keeps its estimate.
 */
export interface RateLimitReservation extends RateLimitDecision {
  /** What was reserved under every policy. */
  readonly estimate: number;
  /**
   * Charges what the call really used, in one atomic store call: gives back what was reserved
   * beyond it, or charges the extra even past the limit, as a debt that later calls wait out.
   * Either lands in the window the reservation was counted in (see the usage-based limits
   * page). Resolves with what is left afterwards: `allowed` is false while a policy is over its
   * limit. `actual` is an integer from 0; a second `settle` or `cancel` rejects.
   *
   * @example
   * ```ts
   * const ticket = await rateLimit.reserve(`tokens:${userId}`, TOKENS_PER_DAY, 2_000);
   * const reply = await model.complete(prompt);
   * await ticket.settle(reply.usage.total_tokens);
   * ```
   */
  settle(actual: number): Promise<RateLimitDecision>;
  /** Gives the whole estimate back: `settle(0)`. */
  cancel(): Promise<RateLimitDecision>;
}

/** The ticket of a reservation `decision` made on `limits`, each policy costing `estimate`. */
export function reservationOf(
  store: CallStore,
  limits: Limits,
  decision: RateLimitDecision,
  estimate: number,
  where: string,
): RateLimitReservation {
  let settled = false;
  const settle = (actual: number): Promise<RateLimitDecision> => {
    try {
      checkUsage(actual, 'actual', where);
      if (settled) {
        throw configError(
          where,
          'settle',
          'a second time',
          'one settle() or cancel() per reservation',
        );
      }
    } catch (error) {
      return Promise.reject(error);
    }
    settled = true;
    return settleUsage(store, limits, decision, actual);
  };
  return { ...decision, estimate, settle, cancel: () => settle(0) };
}
