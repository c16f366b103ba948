import { type Limits } from '../store-contract/store-call.js';
import { type RateLimitDecision } from '../store-contract/store.interface.js';
import { LimitedTrackers } from './limited-trackers.js';
import { Outcome, OutcomeRates, type RouteRing } from './outcome-rates.js';
import { type KeyTemplate, RouteDirectory } from './route-directory.js';

const MAX_ROUTES = 1000;
// Keys named when counted (see turnedAway): a route whose policies change per request only.
const MAX_NAMED = 1024;

/** What the feed keeps of a route so that a decision on it costs no lookup but one. */
interface FedRoute {
  readonly ring: RouteRing | undefined;
  /** By policy index: where the tracker sits in its key, and the head of its summary keys (made
   * when first read). */
  readonly templates: ReadonlyArray<KeyTemplate | undefined>;
  readonly subjects: Array<string | undefined>;
}

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
  private readonly routes = new Map<string, FedRoute>();
  private readonly named = new Map<string, string>();

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
    const fed = this.routes.get(route) ?? this.note(route, limits, own);
    const outcome =
      shown.degraded !== undefined
        ? Outcome.Degraded
        : shown.allowed
          ? Outcome.Allowed
          : Outcome.Limited;
    if (fed.ring !== undefined) OutcomeRates.add(fed.ring, outcome, now);
    if (outcome === Outcome.Limited) this.turnedAway(route, fed, limits, decision, now, shadow);
  }

  /**
   * Counts the key of the first enforced policy that rejected: the key itself, a string the
   * store chain has hashed already, so that a flood costs a counter and no string work. What it
   * stands for (tracker, route, policy) is worked out when the summaries are read.
   */
  private turnedAway(
    route: string,
    fed: FedRoute,
    limits: Limits,
    decision: RateLimitDecision,
    now: number,
    shadow: readonly boolean[] | undefined,
  ): void {
    const policies = decision.policies;
    for (let i = 0; i < policies.length; i++) {
      if (policies[i].allowed || shadow?.[i] === true) continue;
      const key = limits.keys[i];
      const template = fed.templates[i];
      // The template fits unless the route's policies change per request: then the key is
      // named now, in a bounded map.
      if (template === undefined || !RouteDirectory.fits(template, key)) {
        const policy = limits.policies[i];
        const tracker = RouteDirectory.trackerOf(key, policy, i);
        if (tracker === undefined) return;
        if (this.named.size >= MAX_NAMED) this.named.clear();
        this.named.set(key, LimitedTrackers.subject(route, policy.name) + tracker);
      }
      this.limited.count(key, now);
      return;
    }
  }

  /** What a key counted by {@link turnedAway} stands for, as `LimitedTrackers.subject` + tracker. */
  nameOf(key: string): string | undefined {
    const named = this.named.get(key);
    if (named !== undefined) return named;
    for (const [route, fed] of this.routes) {
      for (const template of fed.templates) {
        if (template === undefined || !RouteDirectory.fits(template, key)) continue;
        const subject = (fed.subjects[template.index] ??= LimitedTrackers.subject(
          route,
          template.policyName,
        ));
        return subject + RouteDirectory.trackerIn(template, key)!;
      }
    }
    return undefined;
  }

  private note(route: string, limits: Limits, own: ReadonlyArray<unknown> | undefined): FedRoute {
    const known = this.directory.note(route, limits, own);
    const templates = new Array<KeyTemplate | undefined>(limits.policies.length);
    for (const template of known?.keys ?? []) templates[template.index] = template;
    const fed = { ring: this.rates.ringOf(route), templates, subjects: [] };
    // Routes are a handler's labels, so few; the bound only keeps a bug from growing the map.
    if (this.routes.size < MAX_ROUTES) this.routes.set(route, fed);
    return fed;
  }
}
