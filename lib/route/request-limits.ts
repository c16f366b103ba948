import { type ResolvedRateLimitOptions } from '../options/rate-limit.options.js';
import { type ResolvedPolicy } from '../policy/rate-limit.policy.js';
import { moduleTracker, ProxyTrustWarning, type WarningLogger } from './module-tracker.js';
import { type Limits } from '../store-contract/store-call.js';
import { isPromise, resolveCost } from '../templates/policy-template.js';
import { type RouteCall, type RouteFeatures, type RouteScopes } from './route-plan.js';
import { policyTrackerPart, RouteKeys } from '../keys/route-keys.js';
import { callUserFunction, EXPIRED, type FunctionBound } from '../templates/user-functions.js';
import { type OverrideRegistry } from '../overrides/override-registry.js';

// Each policy's tracker as a key part, filled in only when an override for one tracker needs it.
type Parts = string[] | undefined;

/**
 * What one request to a route is decided on: its policies and costs (resolved per request only
 * where they depend on it) and its keys, one per policy: whose quota it counts (the module's
 * tracker, or a policy's own) put into the shapes {@link RouteKeys} builds.
 */
export class RequestLimits {
  readonly shapes: RouteKeys;
  private readonly proxyTrust: ProxyTrustWarning;

  constructor(
    private readonly options: Pick<
      ResolvedRateLimitOptions,
      'keyPrefix' | 'getTracker' | 'ipv6Subnet'
    >,
    private readonly bound: FunctionBound,
    private readonly logger: WarningLogger,
    private readonly overrides: OverrideRegistry,
  ) {
    this.shapes = new RouteKeys(options.keyPrefix);
    this.proxyTrust = new ProxyTrustWarning(logger);
  }

  async of(call: RouteCall): Promise<Limits> {
    const { context, plan } = call;
    const bound = this.bound;
    const policies: readonly ResolvedPolicy[] =
      plan.policies ??
      (await Promise.all(plan.templates.map((t) => t.resolve(context, bound, plan.where))));
    const costs =
      plan.costs ??
      (await Promise.all(plan.templates.map((t) => resolveCost(t, context, bound, plan.where))));
    const overrides = this.overrides;
    const parts =
      overrides.size !== 0 && overrides.wantsTrackers(policies)
        ? new Array<string>(policies.length)
        : undefined;
    let keys = this.keysOf(call, policies, parts);
    if (!Array.isArray(keys)) keys = await keys;
    // Keys from the policies as declared: an override keeps the id, and so the key.
    if (overrides.size === 0) return { keys, policies, costs };
    return {
      keys,
      policies: overrides.apply(policies, parts, policies === plan.policies),
      costs,
    };
  }

  private keysOf(
    call: RouteCall,
    policies: readonly ResolvedPolicy[],
    parts: Parts,
  ): string[] | Promise<string[]> {
    const features = call.plan.features;
    if (features !== undefined) {
      if (features.scopes !== undefined) {
        return this.scoped(call, features.trackers[0], features.scopes, policies, parts);
      }
      if (features.anyTracker) return this.withTrackers(call, features, policies, parts);
    }
    const tracker = this.moduleTracker(call);
    return typeof tracker === 'string'
      ? this.plain(call, tracker, policies, parts)
      : tracker.then((t) => this.plain(call, t, policies, parts));
  }

  /** The module's tracker, as a key part. */
  private moduleTracker(call: RouteCall): string | Promise<string> {
    return moduleTracker(this.options, this.bound, call, this.logger, this.proxyTrust);
  }

  private plain(
    call: RouteCall,
    tracker: string,
    policies: readonly ResolvedPolicy[],
    parts: Parts,
  ): string[] {
    parts?.fill(tracker);
    const head = this.head(call) + tracker;
    const tails = call.plan.tails;
    const keys = new Array<string>(policies.length);
    for (let i = 0; i < keys.length; i++) {
      keys[i] = head + (tails === undefined ? RouteKeys.tail(policies[i], i) : tails[i]);
    }
    return keys;
  }

  /** The route's key head, rebuilt only when the transport's label for it changes. */
  private head({ context, transport, plan }: RouteCall): string {
    const label = transport.route(context, plan.route, plan.place);
    if (label !== plan.head.label) {
      plan.head.value = this.shapes.routeHead(label);
      plan.head.label = label;
    }
    return plan.head.value;
  }

  /** Keys of a route whose policies have trackers of their own. */
  private async withTrackers(
    call: RouteCall,
    features: RouteFeatures,
    policies: readonly ResolvedPolicy[],
    parts: Parts,
  ): Promise<string[]> {
    const { context, transport, plan } = call;
    const route = transport.route(context, plan.route, plan.place);
    const keys = new Array<string>(policies.length);
    let fallback: string | undefined;
    for (let i = 0; i < policies.length; i++) {
      const own = features.trackers[i];
      let part = own === undefined ? undefined : await this.ownTracker(call, own);
      part ??= fallback ??= await this.moduleTracker(call);
      if (parts !== undefined) parts[i] = part;
      keys[i] = this.shapes.withTracker(route, features.routeTag, part, policies[i], i);
    }
    return keys;
  }

  /**
   * Keys of a route where some policy shares its budget beyond the route. Its policies all count
   * one tracker (checked when declared), which heads every key as the hash tag.
   */
  private async scoped(
    call: RouteCall,
    tracker: RouteFeatures['trackers'][number],
    scopes: RouteScopes,
    policies: readonly ResolvedPolicy[],
    parts: Parts,
  ): Promise<string[]> {
    const part = (await this.ownTracker(call, tracker)) ?? (await this.moduleTracker(call));
    parts?.fill(part);
    const head = this.shapes.scopedHead(part);
    const { marks, tails } = scopes;
    const keys = new Array<string>(policies.length);
    for (let i = 0; i < keys.length; i++) {
      const mark = marks[i];
      keys[i] =
        head +
        (mark === undefined
          ? RouteKeys.scopedRouteTail(this.scopedRoute(call, scopes), policies[i], i)
          : (tails?.[i] ?? RouteKeys.sharedTail(mark, policies[i])));
    }
    return keys;
  }

  /** The route's part of its per-route keys under a shared scope, rebuilt when the label changes. */
  private scopedRoute({ context, transport, plan }: RouteCall, scopes: RouteScopes): string {
    const label = transport.route(context, plan.route, plan.place);
    if (label !== scopes.route.label) {
      scopes.route.value = RouteKeys.scopedRoute(label);
      scopes.route.label = label;
    }
    return scopes.route.value;
  }

  /**
   * A policy tracker's value as a key part; undefined when the policy has none or it returns
   * nothing. A promise is awaited through the bound; one that does not settle in time counts as
   * returning nothing: the module's tracker then.
   */
  private async ownTracker(
    { context, plan }: RouteCall,
    own: RouteFeatures['trackers'][number],
  ): Promise<string | undefined> {
    if (own === undefined) return undefined;
    let value: unknown = callUserFunction(own, 'tracker', context, plan.where);
    if (isPromise(value)) value = await this.bound.settle(value, 'tracker', context, plan.where);
    return policyTrackerPart(value === EXPIRED ? undefined : value, plan.where);
  }
}
