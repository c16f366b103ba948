import { type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { LimitedTrackers } from './limited-trackers.js';
import { Outcome, OutcomeRates } from './outcome-rates.js';
import { RouteDirectory } from './route-directory.js';

/**
 * What this instance's routes decided, kept for the console: decisions per route by outcome,
 * who was turned away most (in bounded summaries), and the routes' keys. The module provides one;
 * it stays inactive, and the guard tells it nothing, unless the console is imported.
 */
export class DecisionFeed {
  /** Set by the console when it starts: until then, deciding costs one property read more. */
  active = false;
  readonly rates = new OutcomeRates();
  readonly limited = new LimitedTrackers();
  readonly directory = new RouteDirectory();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * One decision on `route`. `decision` is the whole route's, its policies at the indexes of
   * `limits`; `shown` the one the client got (the enforced policies', when some are in shadow
   * mode). `own` holds, by index, what stands for a policy's own tracker (undefined: the module's).
   */
  decided(
    route: string,
    limits: Limits,
    decision: RateLimitDecision,
    shown: RateLimitDecision,
    own?: ReadonlyArray<unknown>,
    shadow?: readonly boolean[],
  ): void {
    const now = this.now();
    if (!this.directory.has(route)) this.directory.note(route, limits, own);
    if (shown.degraded !== undefined) return this.rates.count(route, Outcome.Degraded, now);
    if (shown.allowed) return this.rates.count(route, Outcome.Allowed, now);
    this.rates.count(route, Outcome.Limited, now);
    const policies = decision.policies;
    for (let i = 0; i < policies.length; i++) {
      if (policies[i].allowed || shadow?.[i] === true) continue;
      const policy = limits.policies[i];
      const tracker = RouteDirectory.trackerOf(limits.keys[i], policy, i);
      if (tracker !== undefined) this.limited.limited(tracker, route, policy.name, now);
      return;
    }
  }
}
