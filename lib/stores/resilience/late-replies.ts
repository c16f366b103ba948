import { algorithmOf } from '../../algorithms/registry.js';
import { leaseOf } from '../decision.js';
import { type CallStore, type Limits } from '../../store-contract/store-call.js';
import { type RateLimitDecision } from '../../store-contract/store.interface.js';

const ignore = () => {};

/**
 * Undoes in the primary store what a consume or reserve recorded when its reply came after the
 * timeout: the fallback answered that request, and counted it, so the store's count of it is one
 * too many. An allowed decision recorded the request in every policy (a refused one recorded
 * nothing but a lock-out, which stays); it is given back by arrival, exactly that request, and
 * the lease it took, if any, is freed. Sent once, not awaited and not retried, with no answer
 * deadline (it answers nobody, so it is right whenever it lands): a give-back that fails (the
 * connection dropped, the store is down) leaves that one request counted.
 */
export function giveBackLate(primary: CallStore, limits: Limits, late: RateLimitDecision): void {
  if (!late.allowed || late.degraded !== undefined) return;
  const { keys, policies, costs } = limits;
  try {
    let refunded = costs;
    if (leaseOf(late) !== undefined && primary.supports('release')) {
      primary.execute({ op: 'release', limits, of: late, correction: true }).catch(ignore);
      // A refund frees leases too, but not exactly this one: the release does that.
      refunded = costs.map((cost, i) =>
        algorithmOf(policies[i].algorithm).holdsLeases ? 0 : cost,
      );
      if (refunded.every((cost) => cost === 0)) return;
    }
    if (!primary.supports('refund')) return;
    const given = refunded === costs ? limits : { keys, policies, costs: refunded };
    primary.execute({ op: 'refund', limits: given, of: late, correction: true }).catch(ignore);
  } catch {
    // A custom store that throws instead of rejecting: the same as a give-back that failed.
  }
}
